/**
 * `--queue <spec>`, opened with the library's `createRunQueue`: a `redis://` (`rediss://`) URL is
 * BullMQ on Redis, a `postgres://` (`postgresql://`) URL BullMQ on PostgreSQL, both on the queue
 * named `forge-eval`; anything else names a directory of the embedded engine, which is one
 * process's: its worker holds the directory and the collector opens it as a client.
 */
import { createRunQueue, type RunQueue } from "../../src/queue/index.ts";
import { engineOf } from "../../src/queue/run-queue.ts";

/** The BullMQ queue eval jobs go to (beside, never mixed with, `forge worker`'s `forge-runs`). */
export const EVAL_QUEUE_NAME = "forge-eval";

/** An opened queue, with its engine. */
export interface EvalQueue {
  queue: RunQueue & { waitForWork?(signal?: AbortSignal): Promise<void> };
  engine: "redis" | "postgres" | "embedded";
  /** The spec as given, for messages. */
  spec: string;
}

/** A `--queue` that names no engine: a URL of another scheme. */
export class EvalQueueSpecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EvalQueueSpecError";
  }
}

/**
 * Open the queue `spec` names, as a collector (enqueues and reads results) or a worker (takes runs).
 * @example const { queue } = await openEvalQueue("redis://127.0.0.1:6379", "worker");
 */
export async function openEvalQueue(spec: string, role: "collector" | "worker"): Promise<EvalQueue> {
  let engine: EvalQueue["engine"];
  try {
    engine = engineOf(spec);
  } catch (error) {
    throw new EvalQueueSpecError(`--queue: ${(error as Error).message}`);
  }
  const queue =
    engine === "redis"
      ? await createRunQueue({ redis: spec, name: EVAL_QUEUE_NAME })
      : engine === "postgres"
        ? await createRunQueue({ postgres: spec, name: EVAL_QUEUE_NAME })
        : await createRunQueue({
            embedded: spec,
            mode: role === "worker" ? "worker" : "client",
            // A restarted worker takes over the directory a killed one left (its lock goes stale in 10 s).
            ...(role === "worker" && { waitForLockMs: 15_000 }),
          });
  return { queue, engine, spec };
}
