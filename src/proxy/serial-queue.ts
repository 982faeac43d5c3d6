/**
 * FIFO admission gates: `AdmissionQueue` lets up to `capacity` jobs run at once (the in-flight
 * cap, `--max-in-flight`), `SerialQueue` one at a time, for single-slot backends (`--serialize`).
 * Their waiting lines are bounded (`--max-queue`): past it a request is refused at once with 503
 * and `Retry-After`. A waiter whose request is aborted leaves the line without ever running.
 */
import { ProxyErrorKind, ProxyHttpError } from "./errors.ts";

/** Releases the slot; calling it more than once is harmless. */
export type Release = () => void;

/** Options of `AdmissionQueue`. */
export interface AdmissionQueueOptions {
  /** Jobs running at once. */
  capacity: number;
  /** Requests that may wait for a slot (default: no bound); more get 503. */
  maxWaiting?: number | undefined;
  /** What the 503 says is full, e.g. `the --serialize queue`. */
  name?: string | undefined;
  /** `Retry-After` of the 503, in seconds (default 1). */
  retryAfterSeconds?: number | undefined;
}

/** Up to `capacity` admissions at a time, the rest in arrival order. */
export class AdmissionQueue {
  readonly #capacity: number;
  readonly #maxWaiting: number;
  readonly #name: string;
  readonly #retryAfterSeconds: number;
  #running = 0;
  readonly #waiting: { admit: () => void; reject: (reason: unknown) => void }[] = [];

  constructor(options: AdmissionQueueOptions) {
    this.#capacity = options.capacity;
    this.#maxWaiting = options.maxWaiting ?? Number.POSITIVE_INFINITY;
    this.#name = options.name ?? "the queue";
    this.#retryAfterSeconds = options.retryAfterSeconds ?? 1;
  }

  /** Requests waiting for a slot (not counting those running). */
  get pending(): number {
    return this.#waiting.length;
  }

  /** Jobs holding a slot. */
  get running(): number {
    return this.#running;
  }

  /**
   * Wait for a slot. Rejects with the signal's reason if it aborts first, and at once with a 503
   * `ProxyHttpError` (with `Retry-After`) when the waiting line is full.
   */
  acquire(signal?: AbortSignal): Promise<Release> {
    signal?.throwIfAborted();
    if (this.#running < this.#capacity) {
      this.#running += 1;
      return Promise.resolve(this.#releaser());
    }
    if (this.#waiting.length >= this.#maxWaiting) return Promise.reject(this.#full());
    return new Promise<Release>((resolve, reject) => {
      const entry = {
        admit: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve(this.#releaser());
        },
        reject,
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

  /** Run `job` when a slot is free and release it when the job settles. */
  async run<T>(job: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const release = await this.acquire(signal);
    try {
      return await job();
    } finally {
      release();
    }
  }

  #full(): ProxyHttpError {
    return new ProxyHttpError(
      503,
      ProxyErrorKind.OVERLOADED,
      `The proxy is busy: ${this.#name} is full (${this.#maxWaiting} waiting); retry after ${this.#retryAfterSeconds} s`,
      { retryAfterSeconds: this.#retryAfterSeconds },
    );
  }

  #releaser(): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      // The slot passes straight to the next in line, or is freed.
      const next = this.#waiting.shift();
      if (next) next.admit();
      else this.#running -= 1;
    };
  }
}

/** One-at-a-time admission in arrival order (`--serialize`). */
export class SerialQueue extends AdmissionQueue {
  constructor(options: { maxWaiting?: number | undefined } = {}) {
    super({ capacity: 1, maxWaiting: options.maxWaiting, name: "the --serialize queue" });
  }
}
