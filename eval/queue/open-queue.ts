/**
 * `--queue <spec>`: a Redis URL (`redis://` or `rediss://`) opens the BullMQ engine on the queue
 * named `forge-eval`, anything else names a directory of the embedded engine. The embedded engine
 * is one process's: its worker holds the directory and the collector opens it as a client.
 */
import { createBullmqQueue, createEmbeddedQueue, type RunQueue } from "../../src/queue/index.ts";

/** The BullMQ queue eval jobs go to (beside, never mixed with, `forge worker`'s `forge-runs`). */
export const EVAL_QUEUE_NAME = "forge-eval";

/** An opened queue, with its engine. */
export interface EvalQueue {
  queue: RunQueue & { waitForWork?(signal?: AbortSignal): Promise<void> };
  engine: "bullmq" | "embedded";
  /** The spec as given, for messages. */
  spec: string;
}

/** Whether `spec` names Redis rather than a directory. */
export function isRedisSpec(spec: string): boolean {
  return /^rediss?:\/\//i.test(spec);
}

/**
 * Open the queue `spec` names, as a collector (enqueues and reads results) or a worker (takes runs).
 * @example const { queue } = await openEvalQueue("redis://127.0.0.1:6379", "worker");
 */
export async function openEvalQueue(spec: string, role: "collector" | "worker"): Promise<EvalQueue> {
  if (isRedisSpec(spec)) {
    const queue = await createBullmqQueue({ connection: { url: spec }, name: EVAL_QUEUE_NAME });
    return { queue, engine: "bullmq", spec };
  }
  const queue = await createEmbeddedQueue({
    dir: spec,
    mode: role === "worker" ? "worker" : "client",
    // A restarted worker takes over the directory a killed one left (its lock goes stale in 10 s).
    ...(role === "worker" && { waitForLockMs: 15_000 }),
  });
  return { queue, engine: "embedded", spec };
}
