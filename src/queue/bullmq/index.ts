/** The BullMQ engine: runs as BullMQ jobs, on one of its stores (Redis, or PostgreSQL through BullMQ 6's backend). */
export {
  createPostgresQueue,
  PostgresMissingError,
  type PostgresQueueOptions,
} from "./postgres-store.ts";
export {
  type BullmqEngineOptions,
  BullmqMissingError,
  type BullmqQueueOptions,
  BullmqRunQueue,
  createBullmqQueue,
  RunQueueConnectionError,
} from "./queue.ts";
