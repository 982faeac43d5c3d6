/**
 * Supervision of a llama-server the manager spawned: the policy (restart limits, backoff, liveness
 * probe) as a zod schema, and the pure decision of whether and when to restart after a crash.
 */
import { z } from "zod";
import type { ServerExit } from "./errors.ts";

const milliseconds = z.number().int().nonnegative();

/**
 * How a crashed or hung llama-server is brought back. At most `maxRestarts` restarts within
 * `windowMs`, each after a backoff doubling from `backoffMs` up to `maxBackoffMs`; one more crash
 * in the window and the manager gives up (`failed`). The liveness probe asks `/health` every
 * `probeIntervalMs` with a `probeTimeoutMs` deadline; `probeFailures` failures in a row mark the
 * server unhealthy, and it is killed (SIGKILL) and restarted. `probeIntervalMs: 0` turns the probe off.
 */
export const supervisionPolicySchema = z.strictObject({
  maxRestarts: z.number().int().nonnegative().default(5),
  windowMs: milliseconds.default(600_000),
  backoffMs: milliseconds.default(500),
  maxBackoffMs: milliseconds.default(30_000),
  probeIntervalMs: milliseconds.default(10_000),
  probeTimeoutMs: z.number().int().positive().default(5_000),
  probeFailures: z.number().int().positive().default(3),
});

/** A supervision policy as given (every field optional). */
export type SupervisionOptions = z.input<typeof supervisionPolicySchema>;
/** A supervision policy with its defaults filled in. */
export type SupervisionPolicy = z.output<typeof supervisionPolicySchema>;

/** The defaults: 5 restarts in 10 minutes, backoff 0.5 s doubling to 30 s, `/health` every 10 s (5 s deadline, 3 failures). */
export const DEFAULT_SUPERVISION: SupervisionPolicy = supervisionPolicySchema.parse({});

/** The restarts (their times) that count against the limit at `now`. */
export function restartsInWindow(
  restartTimes: readonly number[],
  now: number,
  policy: SupervisionPolicy,
): number[] {
  return restartTimes.filter((time) => now - time < policy.windowMs);
}

/**
 * Whether to restart after a crash at `now`, and after how long: `null` once `maxRestarts`
 * restarts already happened within the window (give up), else the backoff for the next attempt.
 * @example
 * nextRestart([], 0, DEFAULT_SUPERVISION) // { delayMs: 500 }
 */
export function nextRestart(
  restartTimes: readonly number[],
  now: number,
  policy: SupervisionPolicy,
): { delayMs: number } | null {
  const recent = restartsInWindow(restartTimes, now, policy).length;
  if (recent >= policy.maxRestarts) return null;
  return { delayMs: Math.min(policy.maxBackoffMs, policy.backoffMs * 2 ** recent) };
}

/** The message of a manager that gave up: how many restarts, in what window, and the last cause. */
export function gaveUpMessage(policy: SupervisionPolicy, lastCause: string): string {
  return (
    `llama-server gave up: it failed again after ${policy.maxRestarts} restart(s) within ` +
    `${Math.round(policy.windowMs / 1000)} s (last: ${lastCause}). Fix the cause (see its output), ` +
    "then restart the proxy; raise --max-restarts or --restart-window to tolerate more."
  );
}

/** How a process ended, in words: `pid 12 was killed by SIGKILL`, `pid 12 exited with code 1`. */
export function describeExit(exit: ServerExit): string {
  const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${String(exit.exitCode)}`;
  return `pid ${String(exit.pid)} ${how}`;
}
