/**
 * The order of jobs waiting for a slot: lower priority number first, FIFO within a priority. Pure
 * and free of XState, so the SlotWorker statechart and `EndpointPool`'s waiters share one rule.
 */

/** A job as the worker sees it: an id, its priority (lower runs first) and its arrival order. */
export interface SlotJob {
  id: string;
  priority: number;
  /** Arrival order, for FIFO within a priority. */
  seq: number;
}

/** Order of two jobs: lower priority number first, then earlier arrival. */
export function compareJobs(left: SlotJob, right: SlotJob): number {
  return left.priority - right.priority || left.seq - right.seq;
}

/** A new queue with `job` inserted in order; the input is not mutated. */
export function enqueueJob(queue: readonly SlotJob[], job: SlotJob): SlotJob[] {
  const index = queue.findIndex((queued) => compareJobs(job, queued) < 0);
  return index === -1 ? [...queue, job] : [...queue.slice(0, index), job, ...queue.slice(index)];
}
