/**
 * Bounded retries of one client call, shared by the HTTP clients: transient backend errors
 * (connection refused or reset, 502/503/504/529, 429) after an exponential backoff with jitter
 * that honours `Retry-After`, and truncated or malformed streams, each announced by a RETRY chunk.
 */
import { z } from "zod";
import { StreamError } from "../core/errors.ts";
import { backoffDelayMs, isTransientBackendError } from "../core/transient.ts";
import { ChunkType, type StreamChunk } from "../core/types.ts";

const retryOptionsSchema = z.object({
  retries: z.number().int().nonnegative().default(2),
  streamRetries: z.number().int().nonnegative().default(2),
  retryBaseMs: z.number().nonnegative().default(500),
  retryMaxMs: z.number().nonnegative().default(8_000),
  maxRetryAfterMs: z.number().nonnegative().default(30_000),
});

/**
 * Retry options every HTTP client takes. A failure that is not transient (400, 401, 403, 404, a
 * context overflow, a timeout, an answer of the wrong shape) is never retried.
 */
export interface RetryOptions {
  /** Retries of a transient backend error (connection refused or reset, 429, 502, 503, 504, 529). Default 2. */
  retries?: number;
  /** Retries of a stream that was cut, malformed or ended without its last event. Default 2. */
  streamRetries?: number;
  /** First backoff; it doubles with each retry, with jitter (half to all of it). Default 500. */
  retryBaseMs?: number;
  /** Longest backoff between two attempts. Default 8 000. */
  retryMaxMs?: number;
  /**
   * Longest `Retry-After` (429, 503) the client waits for. The wait is what the server asked, at
   * least the backoff; an answer asking for longer is not retried: its error is thrown at once,
   * with `retryAfterSeconds` set. Default 30 000.
   */
  maxRetryAfterMs?: number;
}

/** Resolved retry options. */
export type RetryPolicy = Required<RetryOptions>;

/** The policy of `options`, with defaults; a negative or fractional count is a `TypeError` naming it. */
export function resolveRetryPolicy(options: RetryOptions): RetryPolicy {
  const parsed = retryOptionsSchema.safeParse({
    retries: options.retries,
    streamRetries: options.streamRetries,
    retryBaseMs: options.retryBaseMs,
    retryMaxMs: options.retryMaxMs,
    maxRetryAfterMs: options.maxRetryAfterMs,
  });
  if (!parsed.success) {
    throw new TypeError(`Invalid retry option: ${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}

/** No retries at all (the proxy's per-request clients: the proxy's own client retries). */
export const NO_RETRIES: RetryOptions = { retries: 0, streamRetries: 0 };

/** Which budget a retry draws on. */
export type RetryKind = "backend" | "stream";

/** A retry that was decided: which kind, its number within its budget, and how long to wait first. */
export interface PlannedRetry {
  kind: RetryKind;
  /** 1 for the first retry of its kind. */
  number: number;
  /** The budget of its kind (`retries` or `streamRetries`). */
  limit: number;
  delayMs: number;
  error: unknown;
}

/**
 * The log line of a retry.
 * @example
 * describeRetry({ kind: "backend", number: 1, limit: 2, delayMs: 480, error }, "http://127.0.0.1:8080/v1/chat/completions")
 * // "forge-guardrails: http://127.0.0.1:8080/v1/chat/completions failed (Backend returned HTTP 503: …); retry 1 of 2 in 480 ms"
 */
export function describeRetry(retry: PlannedRetry, source: string): string {
  const reason = retry.error instanceof Error ? retry.error.message : String(retry.error);
  const what = retry.kind === "stream" ? "stream retry" : "retry";
  return `forge-guardrails: ${source} failed (${reason.slice(0, 300)}); ${what} ${retry.number} of ${retry.limit} in ${retry.delayMs} ms`;
}

/**
 * The retries of one call: after each failed attempt, `plan` says whether to try again (and after
 * how long) or rethrows the error. An aborted `signal` is never retried.
 */
export class CallRetries {
  readonly #policy: RetryPolicy;
  readonly #signal: AbortSignal | undefined;
  readonly #onRetry: ((retry: PlannedRetry) => void) | undefined;
  #backend = 0;
  #stream = 0;

  constructor(policy: RetryPolicy, signal: AbortSignal | undefined, onRetry?: (retry: PlannedRetry) => void) {
    this.#policy = policy;
    this.#signal = signal;
    this.#onRetry = onRetry;
  }

  /** The retry after `error`, or `error` thrown when it is not retryable or its budget is spent. */
  plan(error: unknown): PlannedRetry {
    if (this.#signal?.aborted) throw error;
    if (error instanceof StreamError && this.#stream < this.#policy.streamRetries) {
      const delayMs = backoffDelayMs(this.#stream, this.#policy, undefined, Math.random()) ?? 0;
      this.#stream += 1;
      const limit = this.#policy.streamRetries;
      return this.#planned({ kind: "stream", number: this.#stream, limit, delayMs, error });
    }
    if (isTransientBackendError(error) && this.#backend < this.#policy.retries) {
      const delayMs = backoffDelayMs(this.#backend, this.#policy, error.retryAfterSeconds, Math.random());
      if (delayMs === null) throw error;
      this.#backend += 1;
      const limit = this.#policy.retries;
      return this.#planned({ kind: "backend", number: this.#backend, limit, delayMs, error });
    }
    throw error;
  }

  /** Wait out `retry`'s delay; an abort ends the wait at once and rethrows the signal's reason. */
  wait(retry: PlannedRetry): Promise<void> {
    return sleep(retry.delayMs, this.#signal);
  }

  #planned(retry: PlannedRetry): PlannedRetry {
    this.#onRetry?.(retry);
    return retry;
  }
}

/** The chunk that tells a stream's consumer to drop what the failed attempt streamed. */
export const RETRY_CHUNK: StreamChunk = Object.freeze({ type: ChunkType.RETRY });

/** Run `attempt` until it succeeds, retrying transient backend errors under `policy`. */
export async function withRetries<T>(
  attempt: () => Promise<T>,
  policy: RetryPolicy,
  signal: AbortSignal | undefined,
  onRetry?: (retry: PlannedRetry) => void,
): Promise<T> {
  // Counts only once a call failed: the usual call allocates nothing for retries.
  let retries: CallRetries | undefined;
  while (true) {
    try {
      return await attempt();
    } catch (error) {
      retries ??= new CallRetries(policy, signal, onRetry);
      const retry = retries.plan(error);
      await retries.wait(retry);
    }
  }
}

/**
 * A stream retried under `policy`: each retry (stream fault or transient backend error, before
 * or after chunks were sent) yields a RETRY chunk, waits its backoff, and starts `attempt` again.
 * A plain iterator rather than a generator: each chunk passes through with one promise, not a
 * generator step of its own.
 */
export function withStreamRetries(
  attempt: () => AsyncIterable<StreamChunk>,
  policy: RetryPolicy,
  signal: AbortSignal | undefined,
  onRetry?: (retry: PlannedRetry) => void,
): AsyncIterable<StreamChunk> {
  // No retries allowed: the attempt itself, without a wrapper around each chunk.
  if (policy.retries === 0 && policy.streamRetries === 0) return attempt();
  return new RetryingStream(attempt, policy, signal, onRetry);
}

class RetryingStream implements AsyncIterableIterator<StreamChunk> {
  readonly #attempt: () => AsyncIterable<StreamChunk>;
  readonly #policy: RetryPolicy;
  readonly #signal: AbortSignal | undefined;
  readonly #onRetry: ((retry: PlannedRetry) => void) | undefined;
  #inner: AsyncIterator<StreamChunk>;
  #retries: CallRetries | undefined;
  /** The retry announced by the last RETRY chunk, to wait out before the next attempt. */
  #planned: PlannedRetry | undefined;

  constructor(
    attempt: () => AsyncIterable<StreamChunk>,
    policy: RetryPolicy,
    signal: AbortSignal | undefined,
    onRetry: ((retry: PlannedRetry) => void) | undefined,
  ) {
    this.#attempt = attempt;
    this.#policy = policy;
    this.#signal = signal;
    this.#onRetry = onRetry;
    this.#inner = attempt()[Symbol.asyncIterator]();
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<StreamChunk> {
    return this;
  }

  next(): Promise<IteratorResult<StreamChunk>> {
    const planned = this.#planned;
    if (planned) {
      this.#planned = undefined;
      return (this.#retries as CallRetries).wait(planned).then(() => {
        this.#inner = this.#attempt()[Symbol.asyncIterator]();
        return this.next();
      });
    }
    return this.#inner.next().then(undefined, (error: unknown) => {
      this.#retries ??= new CallRetries(this.#policy, this.#signal, this.#onRetry);
      this.#planned = this.#retries.plan(error);
      return { done: false, value: RETRY_CHUNK };
    });
  }

  async return(): Promise<IteratorResult<StreamChunk>> {
    this.#planned = undefined;
    await this.#inner.return?.();
    return { done: true, value: undefined };
  }
}

/** Resolve after `ms`, or reject with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
