/**
 * A request's total deadline (`--deadline`): one signal that aborts when the client leaves, when
 * the request has run for its deadline, or when the proxy's drain deadline passes on shutdown, and
 * the 504 (or the drain's 503) that reports the last two. Every backend call of the request
 * (retries included) and a forwarded stream run under it.
 */
import { ProxyErrorKind, ProxyHttpError } from "../errors.ts";

/** The deadline of one request. */
export class RequestDeadline {
  readonly #signal: AbortSignal;
  readonly #clientSignal: AbortSignal;
  readonly #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #unfollow: () => void;
  #error: ProxyHttpError | undefined;

  /**
   * Follow `clientSignal`; past `totalMs` abort with a 504. With `totalMs` 0 (no deadline, the
   * default) and no `drainSignal` the signal is the client's own and nothing is set up.
   * `drainSignal` (`ProxyDrain.expired`) aborts the request with its reason (a 503 with
   * `Retry-After`) when the proxy's drain deadline passes.
   */
  constructor(clientSignal: AbortSignal, totalMs: number, drainSignal?: AbortSignal) {
    this.#clientSignal = clientSignal;
    if (totalMs <= 0 && drainSignal === undefined) {
      this.#signal = clientSignal;
      this.#unfollow = () => {};
      return;
    }
    const controller = new AbortController();
    this.#signal = controller.signal;
    const abort = () => controller.abort(clientSignal.reason);
    const drain = () => {
      this.#error ??= drainSignal?.reason as ProxyHttpError;
      controller.abort(this.#error);
    };
    if (clientSignal.aborted) abort();
    else clientSignal.addEventListener("abort", abort, { once: true });
    if (drainSignal?.aborted) drain();
    else drainSignal?.addEventListener("abort", drain, { once: true });
    this.#unfollow = () => {
      clientSignal.removeEventListener("abort", abort);
      drainSignal?.removeEventListener("abort", drain);
    };
    if (totalMs <= 0) return;
    this.#timer = setTimeout(() => {
      this.#error = new ProxyHttpError(
        504,
        ProxyErrorKind.BACKEND_TIMEOUT,
        `The request did not complete within its ${totalMs} ms deadline (--deadline)`,
      );
      controller.abort(this.#error);
    }, totalMs);
  }

  /** Whether a total or drain deadline is set (otherwise `signal` is the client's own). */
  get active(): boolean {
    return this.#timer !== undefined || this.#signal !== this.#clientSignal;
  }

  /** Aborts when the client leaves or the deadline passes. */
  get signal(): AbortSignal {
    return this.#signal;
  }

  /** The 504 once the deadline has passed, or the drain's 503 once the drain deadline has. */
  get error(): ProxyHttpError | undefined {
    return this.#error;
  }

  /** The request is over: stop the timer and stop following the client. */
  stop(): void {
    clearTimeout(this.#timer);
    this.#unfollow();
  }

  /**
   * Run `job` under the deadline and stop it when the job settles. A job that fails because the
   * deadline passed (however its code reports the abort) fails with the deadline's 504.
   */
  async run<T>(job: (signal: AbortSignal) => Promise<T>): Promise<T> {
    try {
      return await job(this.signal);
    } catch (error) {
      throw this.#error ?? error;
    } finally {
      this.stop();
    }
  }
}
