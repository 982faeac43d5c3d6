/** Durable runs on a queue: the RunQueue interface, the embedded and BullMQ (Redis, PostgreSQL) engines, workers and registries. */

export * from "./bullmq/index.ts";
export { createRunQueue, type RunQueueSpec } from "./create-run-queue.ts";
export * from "./embedded/index.ts";
export {
  DEFAULT_MAX_PAYLOAD_BYTES,
  type DecideOptions,
  type EnqueueOptions,
  FINISHED_STATUSES,
  type FinishedStatus,
  LeaseLostError,
  type PruneOptions,
  QueueFencedError,
  type RunJob,
  type RunLease,
  RunPayloadTooLargeError,
  type RunQueue,
  RunQueueClosedError,
  RunQueueStateError,
  type RunRecord,
  type RunStatus,
  type StoredCheckpoint,
} from "./run-queue.ts";
export {
  defineRegistry,
  type RunRegistry,
  type RunTracing,
  startWorker,
  type Worker,
  type WorkerOptions,
} from "./worker.ts";
