/**
 * A FIFO gate that lets one backend job run at a time, for single-slot backends (`--serialize`).
 * A waiter whose request is aborted leaves the line without ever running.
 */

/** Releases the slot; calling it more than once is harmless. */
export type Release = () => void;

/** One-at-a-time admission in arrival order. */
export class SerialQueue {
  #busy = false;
  readonly #waiting: { admit: () => void; reject: (reason: unknown) => void; signal?: AbortSignal }[] = [];

  /** Requests waiting for the slot (not counting the one running). */
  get pending(): number {
    return this.#waiting.length;
  }

  /** Wait for the slot. Rejects with the signal's reason if it aborts first. */
  acquire(signal?: AbortSignal): Promise<Release> {
    signal?.throwIfAborted();
    if (!this.#busy) {
      this.#busy = true;
      return Promise.resolve(this.#releaser());
    }
    return new Promise<Release>((resolve, reject) => {
      const entry = {
        admit: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve(this.#releaser());
        },
        reject,
        ...(signal && { signal }),
      };
      const onAbort = () => {
        const index = this.#waiting.indexOf(entry);
        if (index >= 0) this.#waiting.splice(index, 1);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(entry);
    });
  }

  /** Run `job` when the slot is free and release it when the job settles. */
  async run<T>(job: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const release = await this.acquire(signal);
    try {
      return await job();
    } finally {
      release();
    }
  }

  #releaser(): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      if (next) next.admit();
      else this.#busy = false;
    };
  }
}
