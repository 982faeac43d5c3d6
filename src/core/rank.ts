/**
 * One priority sense (ADR 016): a `rank` is served lower first, FIFO within a rank — the order of
 * `SlotWorker`, `EndpointPool`'s waiters and `SendOptions`. The durable run queue's `priority` is
 * the other sense (higher first); `rankOfQueuePriority` is the one bridge between them. The
 * lower-first `priority` these options had before is still read, as a deprecated alias of `rank`.
 */
import { RankConflictError } from "./errors.ts";

/** The rank fields of an option object: `rank`, and its deprecated alias `priority`. */
export interface RankOptions {
  /** Where this waits for a shared slot: lower is served first, FIFO within a rank. Default 0. */
  rank?: number;
  /**
   * The same number under its old name (lower first), read when `rank` is absent.
   * @deprecated use rank (lower first)
   */
  priority?: number;
}

/**
 * The rank an option object asks for: `rank`, else its deprecated alias `priority`; undefined
 * when it names neither. `owner` names the option object in the error.
 * @throws RankConflictError when both are given and differ.
 * @example
 * resolveRank({ priority: 2 }, "SlotWorker.submit"); // 2
 * resolveRank({ rank: 1, priority: 2 }, "SlotWorker.submit"); // throws RankConflictError
 */
export function resolveRank(options: RankOptions, owner: string): number | undefined {
  const { rank, priority } = options;
  if (rank !== undefined && priority !== undefined && rank !== priority) {
    throw new RankConflictError(owner, rank, priority);
  }
  return rank ?? priority;
}

/**
 * Check a rank before it orders waiters: a finite number.
 * @throws RangeError naming the value otherwise.
 */
export function assertFiniteRank(rank: number): number {
  if (!Number.isFinite(rank)) {
    throw new RangeError(
      `rank (or its deprecated alias priority) must be a finite number, got ${String(rank)}`,
    );
  }
  return rank;
}

/**
 * The rank of a run the durable run queue hands out: the queue's `priority` runs higher first, a
 * rank lower first, so a queued run's LLM calls wait in a pool as long as its priority says
 * (priority 4 → rank -4; priority 0 → rank 0, not -0).
 * @example
 * rankOfQueuePriority(5); // -5: ahead of every call of rank 0
 */
export function rankOfQueuePriority(queuePriority: number): number {
  return queuePriority === 0 ? 0 : -queuePriority;
}
