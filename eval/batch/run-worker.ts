/**
 * A batch worker thread: starts the backend with the options the main thread gives it, then
 * runs the tasks it is sent and posts each outcome back. Rows are written by the main thread.
 */
import { parentPort } from "node:worker_threads";
import type { LoopConfig } from "../ablation.ts";
import { type BackendOptions, type BackendSession, startBackend } from "../backends/registry.ts";
import { scenarioById } from "../scenarios/index.ts";
import { executeTask } from "./batch.ts";

/** A task as it crosses the thread boundary (the scenario by id). */
export interface WorkerTask {
  key: string;
  scenarioId: string;
  config: LoopConfig;
  runIndex: number;
  seed: number;
}

/** Messages the main thread sends. */
export type ToWorker =
  | { type: "init"; backend: string; options: BackendOptions; stream: boolean }
  | { type: "run"; task: WorkerTask }
  | { type: "close" };

if (parentPort) {
  const port = parentPort;
  let session: BackendSession | null = null;
  let stream = false;
  port.on("message", async (message: ToWorker) => {
    if (message.type === "init") {
      stream = message.stream;
      session = await startBackend(message.backend, message.options);
      port.postMessage({ type: "ready" });
    } else if (message.type === "run") {
      const { task } = message;
      const scenario = scenarioById(task.scenarioId);
      if (!scenario || !session) {
        port.postMessage({ type: "failed", key: task.key, message: `worker cannot run ${task.scenarioId}` });
        return;
      }
      const outcome = await executeTask({ ...task, scenario }, session, stream);
      port.postMessage({ type: "done", key: task.key, outcome });
    } else {
      await session?.close();
      port.close();
    }
  });
}
