/**
 * Queued runs as a watch source: `createWorkerWatch({ url })` is `startWorker`'s `watch` option,
 * a reporter per run the worker takes, named by the queue's run id, marked when it resumes.
 */
import { createHash } from "node:crypto";
import type { RunObserver } from "../../core/run-observer.ts";
import { WatchSource } from "./events.ts";
import { createWatchReporter } from "./reporter.ts";
import type { WatchTransportOptions } from "./transport.ts";

/** A queued run a worker is about to run, as `startWorker` describes it to its `watch` option. */
export interface WatchedQueuedRun {
  runId: string;
  workflow: string;
  /** It goes on from a checkpoint. */
  resumed: boolean;
  /** The lease's attempt, from 1. */
  attempt: number;
}

/**
 * For each run a worker takes, a reporter of that run alone: the worker gives its `observer` to
 * that run only (one runner serves every lane), so runs under way at once never mix. Each attempt
 * is its own watch run: the queue's run id, then `-attempt-<n>` from the second lease on.
 * Compactions are reported too when the registry's runner has a `ContextManager` (each run has its own).
 * @example
 * const worker = startWorker({ queue, registry, concurrency: 2, watch: createWorkerWatch({ url: "http://127.0.0.1:4141" }) });
 */
export function createWorkerWatch(options: WatchTransportOptions): (run: WatchedQueuedRun) => {
  readonly observer: RunObserver;
  flush(): Promise<void>;
} {
  return (run) =>
    createWatchReporter({
      ...options,
      name: run.runId,
      runId: watchRunIdOf(run),
      source: WatchSource.QUEUE,
      resumed: run.resumed,
    });
}

/** A watch run id for a queued run's attempt (a queue run id may hold any character). */
export function watchRunIdOf(run: Pick<WatchedQueuedRun, "runId" | "attempt">): string {
  const cleaned = run.runId.replace(/[^A-Za-z0-9_-]+/g, "-").slice(0, 80) || "run";
  // Two queue ids that clean to the same text (a.b, a-b) keep apart by a hash of the original.
  const base =
    cleaned === run.runId
      ? cleaned
      : `${cleaned}-${createHash("sha256").update(run.runId).digest("hex").slice(0, 8)}`;
  return run.attempt > 1 ? `${base}-attempt-${run.attempt}` : base;
}
