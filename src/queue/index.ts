/** Durable runs on a queue: the RunQueue interface, the embedded and BullMQ engines, workers and registries. */
export {
  BullmqMissingError,
  type BullmqQueueOptions,
  BullmqRunQueue,
  createBullmqQueue,
  RunQueueConnectionError,
} from "./bullmq-queue.ts";
export { createEmbeddedQueue, type EmbeddedQueueOptions } from "./embedded-queue.ts";
export {
  type EnqueueOptions,
  LeaseLostError,
  type RunJob,
  type RunLease,
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
