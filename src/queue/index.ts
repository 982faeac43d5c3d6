/** Durable runs on a queue: the RunQueue interface, the embedded and BullMQ (Redis, PostgreSQL) engines, workers and registries. */

export {
  createPostgresQueue,
  PostgresMissingError,
  type PostgresQueueOptions,
} from "./bullmq/postgres-store.ts";
export {
  type BullmqEngineOptions,
  BullmqMissingError,
  type BullmqQueueOptions,
  BullmqRunQueue,
  createBullmqQueue,
  RunQueueConnectionError,
} from "./bullmq/queue.ts";
export { createRunQueue, type RunQueueSpec } from "./create-run-queue.ts";
export type { QuarantinedFile } from "./embedded/files.ts";
export { createEmbeddedQueue, type EmbeddedQueueOptions, type EmbeddedRunQueue } from "./embedded/queue.ts";
export {
  DEFAULT_MAX_PAYLOAD_BYTES,
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
  type RunRecord,
  type RunStatus,
  type StoredCheckpoint,
} from "./run-queue.ts";
export {
  defineRegistry,
  type RunRegistry,
  startWorker,
  type Worker,
  type WorkerOptions,
} from "./worker.ts";
