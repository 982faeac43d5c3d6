/**
 * The transient-failure rule, beside `BackendError`: which backend errors another attempt may not
 * meet, and how long to wait before that attempt. The HTTP clients' retries (`clients/retry.ts`)
 * and the run queue's worker (a run retried from its checkpoint) share it, so the two cannot drift.
 */
import { z } from "zod";
import { BackendError } from "./errors.ts";

const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504, 529]);

/**
 * True for a backend error that another attempt may not meet: the server unreachable or the
 * connection lost (503 from the transport), an overloaded or restarting server (502, 503, 504,
 * Anthropic's 529) and rate limiting (429). A 502 the client wrote itself for an answer of the
 * wrong shape, or for a redirect, says the same thing again and is not transient.
 */
export function isTransientBackendError(error: unknown): error is BackendError {
  if (!(error instanceof BackendError) || !TRANSIENT_STATUSES.has(error.statusCode)) return false;
  const cause = error.cause;
  if (cause instanceof SyntaxError || cause instanceof z.ZodError) return false;
  return !(cause instanceof Error && isRedirect(cause));
}

/** fetch's network error for a 3xx answer when `redirect` is `"error"`. */
export function isRedirect(error: Error): boolean {
  return error.cause instanceof Error && error.cause.message === "unexpected redirect";
}

/** How a retry waits: an exponential backoff from `retryBaseMs` up to `retryMaxMs`, and the longest `Retry-After` honoured. */
export interface BackoffPolicy {
  retryBaseMs: number;
  retryMaxMs: number;
  maxRetryAfterMs: number;
}

/**
 * The wait before retry number `retry` (0 for the first): `retryBaseMs · 2^retry`, capped at
 * `retryMaxMs`, scaled by a jitter in [0.5, 1] (`random` in [0, 1)); never less than
 * `retryAfterSeconds`. `null` when `retryAfterSeconds` is past `maxRetryAfterMs`.
 */
export function backoffDelayMs(
  retry: number,
  policy: BackoffPolicy,
  retryAfterSeconds: number | undefined,
  random: number,
): number | null {
  const backoff = Math.min(policy.retryMaxMs, policy.retryBaseMs * 2 ** retry) * (0.5 + random / 2);
  if (retryAfterSeconds === undefined) return Math.round(backoff);
  const asked = retryAfterSeconds * 1000;
  if (asked > policy.maxRetryAfterMs) return null;
  return Math.round(Math.max(asked, backoff));
}
