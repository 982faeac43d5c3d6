/**
 * The order of jobs waiting for a slot: lower rank first, FIFO within a rank. Pure
 * and free of XState, so the SlotWorker statechart and `EndpointPool`'s waiters share one rule.
 */

/** A job as the worker sees it: an id, its rank (lower runs first) and its arrival order. */
export interface SlotJob {
  id: string;
  rank: number;
  /** Arrival order, for FIFO within a rank. */
  seq: number;
}

/** Order of two jobs: lower rank first, then earlier arrival. */
export function compareJobs(left: SlotJob, right: SlotJob): number {
  return left.rank - right.rank || left.seq - right.seq;
}

/** A new queue with `job` inserted in order; the input is not mutated. */
export function enqueueJob(queue: readonly SlotJob[], job: SlotJob): SlotJob[] {
  const index = queue.findIndex((queued) => compareJobs(job, queued) < 0);
  return index === -1 ? [...queue, job] : [...queue.slice(0, index), job, ...queue.slice(index)];
}
