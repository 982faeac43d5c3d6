/**
 * Worker threads for batch runs: the agent loops of a sim-model batch are CPU-bound in one
 * thread, so spreading them over the machine's cores shortens a batch. The main thread keeps
 * the sim-model server and writes the rows.
 */
import { Worker } from "node:worker_threads";
import type { BackendOptions } from "../backends/registry.ts";
import type { RunOutcome } from "../run/types.ts";
import type { RunTask } from "./batch.ts";
import type { ToWorker } from "./run-worker.ts";

interface PoolWorker {
  worker: Worker;
  inFlight: number;
}

/** A started pool. */
export interface WorkerPool {
  execute(task: RunTask): Promise<RunOutcome>;
  close(): Promise<void>;
}

const WORKER_URL = new URL("./run-worker.ts", import.meta.url).href;
// Worker threads do not inherit tsx's loader hooks: register them before loading the worker.
const BOOT = `import("tsx/esm/api").then(({ register }) => { register(); return import(${JSON.stringify(WORKER_URL)}); });`;

/** Start `size` workers, each with its own session of the same backend. */
export async function startWorkerPool(
  size: number,
  backend: string,
  options: BackendOptions,
  stream: boolean,
): Promise<WorkerPool> {
  const pending = new Map<
    string,
    { resolve: (outcome: RunOutcome) => void; reject: (error: Error) => void; owner: PoolWorker }
  >();
  const workers: PoolWorker[] = await Promise.all(
    Array.from({ length: size }, async () => {
      const worker = new Worker(BOOT, { eval: true });
      const entry: PoolWorker = { worker, inFlight: 0 };
      await new Promise<void>((resolve, reject) => {
        worker.on(
          "message",
          (message: { type: string; key?: string; outcome?: RunOutcome; message?: string }) => {
            if (message.type === "ready") return resolve();
            const waiting = message.key ? pending.get(message.key) : undefined;
            if (!waiting) return;
            pending.delete(message.key as string);
            waiting.owner.inFlight -= 1;
            if (message.type === "done") waiting.resolve(message.outcome as RunOutcome);
            else waiting.reject(new Error(message.message ?? "worker failed"));
          },
        );
        worker.once("error", (error) => {
          reject(error);
          for (const [key, waiting] of pending) {
            if (waiting.owner !== entry) continue;
            pending.delete(key);
            waiting.reject(error);
          }
        });
        worker.postMessage({ type: "init", backend, options, stream } satisfies ToWorker);
      });
      return entry;
    }),
  );
  return {
    execute(task) {
      const owner = workers.reduce((least, candidate) =>
        candidate.inFlight < least.inFlight ? candidate : least,
      );
      owner.inFlight += 1;
      return new Promise<RunOutcome>((resolve, reject) => {
        pending.set(task.key, { resolve, reject, owner });
        const message: ToWorker = {
          type: "run",
          task: {
            key: task.key,
            scenarioId: task.scenario.id,
            config: task.config,
            runIndex: task.runIndex,
            seed: task.seed,
          },
        };
        owner.worker.postMessage(message);
      });
    },
    async close() {
      await Promise.all(
        workers.map(async ({ worker }) => {
          worker.postMessage({ type: "close" } satisfies ToWorker);
          await new Promise((resolve) => setTimeout(resolve, 50));
          await worker.terminate();
        }),
      );
    },
  };
}
