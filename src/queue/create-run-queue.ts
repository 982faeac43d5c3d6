/**
 * One entry for every engine: `createRunQueue("redis://…" | "postgres://…" | "<directory>")` or
 * `{ redis } | { postgres } | { embedded }`, so switching engines is one connection string.
 */

import { createPostgresQueue, type PostgresQueueOptions } from "./bullmq/postgres-store.ts";
import { type BullmqQueueOptions, createBullmqQueue } from "./bullmq/queue.ts";
import { createEmbeddedQueue, type EmbeddedQueueOptions } from "./embedded/queue.ts";
import { engineOf, type RunQueue } from "./run-queue.ts";

/** Which queue to open: a URL or directory, or an engine with its options. */
export type RunQueueSpec =
  | string
  | ({ redis: string | { host: string; port: number } } & Omit<BullmqQueueOptions, "connection">)
  | ({ postgres: string | PostgresQueueOptions["connection"] } & Omit<PostgresQueueOptions, "connection">)
  | ({ embedded: string } & Omit<EmbeddedQueueOptions, "dir">);

/**
 * Open a run queue: `redis://` / `rediss://` URLs open BullMQ on Redis, `postgres://` /
 * `postgresql://` BullMQ on PostgreSQL, anything else is the embedded queue's directory.
 * @example
 * const queue = await createRunQueue(process.env.FORGE_QUEUE ?? ".forge/queue");
 * const worker = startWorker({ queue, registry });
 */
export async function createRunQueue(spec: RunQueueSpec): Promise<RunQueue> {
  if (typeof spec === "string") {
    const engine = engineOf(spec);
    if (engine === "redis") return createBullmqQueue({ connection: { url: spec } });
    if (engine === "postgres") return createPostgresQueue({ connection: { url: spec } });
    return createEmbeddedQueue({ dir: spec });
  }
  if ("redis" in spec) {
    const { redis, ...options } = spec;
    return createBullmqQueue({ ...options, connection: typeof redis === "string" ? { url: redis } : redis });
  }
  if ("postgres" in spec) {
    const { postgres, ...options } = spec;
    return createPostgresQueue({
      ...options,
      connection: typeof postgres === "string" ? { url: postgres } : postgres,
    });
  }
  const { embedded, ...options } = spec;
  return createEmbeddedQueue({ ...options, dir: embedded });
}
