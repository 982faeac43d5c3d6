/**
 * The collector of a queued eval: it enqueues every pending run (run id from the run key) and
 * hands `runBatch` an `execute` that waits for the run's result on the queue instead of running
 * it, so the rows are appended by this one process while workers elsewhere make the runs.
 */
import { setMaxListeners } from "node:events";
import type { RunTask } from "../batch/batch.ts";
import type { RunOutcome } from "../run/types.ts";
import { EVAL_JOB, evalJobOf, evalRunId, outcomeOf, type QueuedBackendOptions } from "./eval-job.ts";
import type { EvalQueue } from "./open-queue.ts";

/** How often the collector of an embedded queue reads the runs' states (its client sees files). */
const EMBEDDED_POLL_MS = 1_000;
/** Results awaited at once on BullMQ (each wait is woken by the queue's events). */
const BULLMQ_WAITS = 64;

/** What the collector gives `runBatch`. */
export interface QueueCollector {
  /**
   * Enqueue the tasks in order; a run the queue already holds (a resumed batch) is left as it is.
   * Stops early, without an error, once the signal aborts.
   */
  enqueue(tasks: readonly RunTask[]): Promise<void>;
  /** Wait for the task's run to finish on the queue and return its outcome. */
  execute(task: RunTask): Promise<RunOutcome>;
  /** Runs to await at once: `runBatch`'s concurrency. */
  readonly concurrency: number;
  close(): Promise<void>;
}

/** Options of `createQueueCollector`. */
export interface QueueCollectorOptions {
  queue: EvalQueue;
  /** The batch's id (`queueBatchIdFor`): with the run key, it names each run on the queue. */
  batchId: string;
  backend: string;
  backendOptions: QueuedBackendOptions;
  stream: boolean;
  /** Aborts the waits (Ctrl-C): the runs stay on the queue for a `--resume`. */
  signal?: AbortSignal;
}

/** A collector for one batch on `options.queue`. */
export function createQueueCollector(options: QueueCollectorOptions): QueueCollector {
  const { queue, engine } = options.queue;
  // One signal of its own for the many waits at once (each adds a listener), following the caller's.
  const stop = new AbortController();
  setMaxListeners(0, stop.signal);
  const forward = () => stop.abort(options.signal?.reason);
  if (options.signal?.aborted) forward();
  else options.signal?.addEventListener("abort", forward, { once: true });
  const waitFor = engine === "embedded" ? embeddedWaiter(options.queue, stop.signal) : null;
  return {
    concurrency: engine === "embedded" ? Number.MAX_SAFE_INTEGER : BULLMQ_WAITS,
    async enqueue(tasks) {
      for (const task of tasks) {
        // Stopped (Ctrl-C): what is enqueued stays; the batch then writes nothing more.
        if (options.signal?.aborted) return;
        const job = evalJobOf(task, options.backend, options.backendOptions, options.stream);
        await queue.enqueue(EVAL_JOB, JSON.stringify(job), { runId: evalRunId(options.batchId, task.key) });
      }
    },
    async execute(task) {
      const runId = evalRunId(options.batchId, task.key);
      const result = waitFor
        ? await waitFor.result(runId)
        : await queue.result(runId, { signal: stop.signal });
      return outcomeOf(task.key, result);
    },
    async close() {
      options.signal?.removeEventListener("abort", forward);
      waitFor?.close();
      await queue.close();
    },
  };
}

/**
 * Waits for many runs of an embedded queue with one reader: every read of a client scans the
 * whole directory, so one `list()` per interval serves every waiting run.
 */
function embeddedWaiter(evalQueue: EvalQueue, signal: AbortSignal | undefined) {
  const waiting = new Map<string, { resolve: (result: unknown) => void; reject: (error: Error) => void }>();
  let timer: NodeJS.Timeout | undefined;
  // One read at a time: set from scheduling until the read it scheduled has settled its runs.
  let scheduled = false;
  let closed = false;
  const schedule = () => {
    if (scheduled || closed || waiting.size === 0) return;
    scheduled = true;
    timer = setTimeout(poll, EMBEDDED_POLL_MS);
  };
  const stopAll = (error: Error) => {
    for (const entry of waiting.values()) entry.reject(error);
    waiting.clear();
  };
  const abort = () => stopAll(signal?.reason instanceof Error ? signal.reason : new Error("aborted"));
  signal?.addEventListener("abort", abort, { once: true });
  const poll = async () => {
    try {
      for (const record of await evalQueue.queue.list()) {
        const entry = waiting.get(record.runId);
        if (!entry) continue;
        if (record.status === "completed") {
          waiting.delete(record.runId);
          entry.resolve(record.result);
        } else if (record.status === "failed" || record.status === "cancelled") {
          waiting.delete(record.runId);
          const error = new Error(record.error?.message ?? `Run ${record.runId} was ${record.status}`);
          error.name = record.error?.name ?? "Error";
          entry.reject(error);
        }
      }
    } catch (error) {
      stopAll(error as Error);
    }
    scheduled = false;
    schedule();
  };
  return {
    result(runId: string): Promise<unknown> {
      signal?.throwIfAborted();
      return new Promise((resolve, reject) => {
        waiting.set(runId, { resolve, reject });
        schedule();
      });
    },
    close() {
      closed = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", abort);
      stopAll(new Error("The collector closed"));
    },
  };
}
