/**
 * A timer for "nothing arrived for `timeoutMs`", shared by the clients' idle deadline
 * (src/clients/http.ts) and the proxy's body watch (src/proxy/backend/transport.ts).
 */

/**
 * Calls `onIdle` once when `touch` has not been called for `timeoutMs`. A touch only notes the
 * time: the one timer, when it fires, sleeps again for what is left of the wait, so a fast stream
 * costs no timer work per chunk. Time spent paused (a reader waiting on a slow consumer) is not
 * silence.
 */
export class IdleTimer {
  readonly #timeoutMs: number;
  readonly #onIdle: () => void;
  #timer: ReturnType<typeof setTimeout>;
  #lastActivity = performance.now();
  #paused = false;
  #stopped = false;

  constructor(timeoutMs: number, onIdle: () => void) {
    this.#timeoutMs = timeoutMs;
    this.#onIdle = onIdle;
    this.#timer = setTimeout(() => this.#check(), timeoutMs);
  }

  /** Restart the wait. */
  touch(): void {
    this.#lastActivity = performance.now();
  }

  /** Stop counting silence until `resume`. */
  pause(): void {
    this.#paused = true;
  }

  /** Count silence again, from now. */
  resume(): void {
    this.#paused = false;
    this.#lastActivity = performance.now();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  #check(): void {
    if (this.#stopped) return;
    const idle = performance.now() - this.#lastActivity;
    if (this.#paused || idle < this.#timeoutMs) {
      const wait = this.#paused ? this.#timeoutMs : this.#timeoutMs - idle;
      this.#timer = setTimeout(() => this.#check(), wait);
      return;
    }
    this.#stopped = true;
    this.#onIdle();
  }
}
