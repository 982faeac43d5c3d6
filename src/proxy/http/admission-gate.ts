/**
 * FIFO admission gates (not queues: nothing is stored, a request waits in line): `AdmissionGate` lets jobs whose weights add up to at most `capacity` run
 * at once (the in-flight cap, `--max-in-flight`, weighs each request 1; the body memory cap,
 * `--max-body-memory`, weighs it by its size), `SerialGate` one at a time, for single-slot
 * backends (`--serialize`).
 * Their waiting lines are bounded (`--max-queue`): past it a request is refused at once with 503
 * and `Retry-After`. A waiter whose request is aborted leaves the line without ever running.
 * On shutdown (`close`) every waiter, and every request after it, is refused the same way.
 */
import { ProxyErrorKind, ProxyHttpError } from "../errors.ts";

/** Releases the slot; calling it more than once is harmless. */
export type Release = () => void;

/** Options of `AdmissionGate`. */
export interface AdmissionGateOptions {
  /** Total weight of the jobs running at once; one job heavier than this runs alone. */
  capacity: number;
  /** Requests that may wait for a slot (default: no bound); more get 503. */
  maxWaiting?: number | undefined;
  /** What the 503 says is full, e.g. `the --serialize queue`. */
  name?: string | undefined;
  /** `Retry-After` of the 503, in seconds (default 1). */
  retryAfterSeconds?: number | undefined;
}

/** Admissions up to `capacity` in weight at a time, the rest in arrival order. */
export class AdmissionGate {
  readonly #capacity: number;
  readonly #maxWaiting: number;
  readonly #name: string;
  readonly #retryAfterSeconds: number;
  #running = 0;
  #weight = 0;
  readonly #waiting: { weight: number; admit: () => void; refuse: (error: ProxyHttpError) => void }[] = [];
  /** Set by `close`: the refusal every waiter and later request gets. */
  #closed: (() => ProxyHttpError) | undefined;

  constructor(options: AdmissionGateOptions) {
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
   * Wait for room for `weight` (default 1). Rejects with the signal's reason if it aborts first,
   * and at once with a 503 `ProxyHttpError` (with `Retry-After`) when the waiting line is full.
   */
  acquire(signal?: AbortSignal, weight = 1): Promise<Release> {
    signal?.throwIfAborted();
    if (this.#closed) return Promise.reject(this.#closed());
    if (this.#waiting.length === 0 && this.#fits(weight)) {
      this.#take(weight);
      return Promise.resolve(this.#releaser(weight));
    }
    if (this.#waiting.length >= this.#maxWaiting) return Promise.reject(this.#full());
    return new Promise<Release>((resolve, reject) => {
      const entry = {
        weight,
        admit: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve(this.#releaser(weight));
        },
        refuse: (error: ProxyHttpError) => {
          signal?.removeEventListener("abort", onAbort);
          reject(error);
        },
      };
      const onAbort = () => {
        const index = this.#waiting.indexOf(entry);
        if (index >= 0) this.#waiting.splice(index, 1);
        reject(signal?.reason);
        // A heavy request that leaves may unblock lighter ones behind it.
        if (index === 0) this.#admitWaiting();
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(entry);
    });
  }

  /**
   * Stop admitting: every request still waiting, and every later one, is rejected with `refusal()`
   * (a 503 with `Retry-After` on shutdown). Jobs already running keep their slots until they end.
   */
  close(refusal: () => ProxyHttpError): void {
    this.#closed ??= refusal;
    for (const waiter of this.#waiting.splice(0)) waiter.refuse(this.#closed());
  }

  /** Whether `close` was called. */
  get closed(): boolean {
    return this.#closed !== undefined;
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

  #fits(weight: number): boolean {
    return this.#running === 0 || this.#weight + weight <= this.#capacity;
  }

  #take(weight: number): void {
    this.#running += 1;
    this.#weight += weight;
  }

  #releaser(weight: number): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#running -= 1;
      this.#weight -= weight;
      this.#admitWaiting();
    };
  }

  /** Admit from the head of the line while the next one fits (arrival order is kept). */
  #admitWaiting(): void {
    for (
      let next = this.#waiting[0];
      next !== undefined && this.#fits(next.weight);
      next = this.#waiting[0]
    ) {
      this.#waiting.shift();
      this.#take(next.weight);
      next.admit();
    }
  }
}

/** One-at-a-time admission in arrival order (`--serialize`). */
export class SerialGate extends AdmissionGate {
  constructor(options: { maxWaiting?: number | undefined } = {}) {
    super({ capacity: 1, maxWaiting: options.maxWaiting, name: "the --serialize queue" });
  }
}
