/**
 * `npm run eval -- worker --queue <spec>`: takes eval runs off a queue, makes each against the
 * backend its job names (started once per backend and options, the API key from this process),
 * and completes the job with the run's outcome; the collector writes the row. A worker killed
 * mid-run loses nothing: its run goes back to waiting (BullMQ's stall check, or the embedded
 * queue's recovery when a worker opens the directory again) and is made again from the start.
 */

import { LeaseLostError, type RunLease } from "../../src/queue/index.ts";
import { type BackendSession, startBackend } from "../backends/registry.ts";
import { executeTask } from "../batch/batch.ts";
import { scenarioById } from "../scenarios/index.ts";
import { type EvalJob, EvalJobError, parseEvalJob } from "./eval-job.ts";
import type { EvalQueue } from "./open-queue.ts";

/** How often an idle worker looks for runs when the engine cannot say (runs added elsewhere). */
const IDLE_POLL_MS = 200;

/** Options of `runEvalWorker`. */
export interface EvalWorkerOptions {
  queue: EvalQueue;
  /** Runs made at once (default 1). */
  concurrency?: number;
  /** The backend's API key (jobs carry none). */
  apiKey?: string;
  workerId?: string;
  /** Stop taking runs; runs under way finish and are completed first. */
  signal?: AbortSignal;
  /** Stop once no run waits (for one-shot workers and tests). */
  exitWhenIdle?: boolean;
  /** Hears each run settled, for logs. */
  onSettled?: (key: string, outcome: "completed" | "failed" | "lost") => void;
}

/** What a worker did. */
export interface EvalWorkerSummary {
  completed: number;
  failed: number;
}

/** A backend this worker cannot start: the run goes back to the queue and the worker stops. */
export class EvalWorkerBackendError extends Error {
  constructor(backend: string, cause: unknown) {
    super(
      `This worker cannot start backend ${backend}: ${(cause as Error)?.message ?? String(cause)}. The run went back to the queue for a worker that can.`,
      { cause },
    );
    this.name = "EvalWorkerBackendError";
  }
}

/**
 * Work the queue's eval runs until `signal` aborts (or, with `exitWhenIdle`, no run waits).
 * Rejects with `EvalWorkerBackendError` when a job's backend cannot start here.
 */
export async function runEvalWorker(options: EvalWorkerOptions): Promise<EvalWorkerSummary> {
  const { queue } = options.queue;
  const workerId = options.workerId ?? `eval-worker-${process.pid}`;
  const sessions = new Map<string, Promise<BackendSession>>();
  const summary: EvalWorkerSummary = { completed: 0, failed: 0 };
  const stop = new AbortController();
  const stopped = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
  let failure: unknown;

  const sessionFor = (job: EvalJob): Promise<BackendSession> => {
    const id = JSON.stringify([job.backend, job.backendOptions]);
    let session = sessions.get(id);
    if (!session) {
      session = startBackend(job.backend, {
        ...job.backendOptions,
        ...(options.apiKey && { apiKey: options.apiKey }),
      });
      sessions.set(id, session);
    }
    return session;
  };

  const work = async (lease: RunLease) => {
    let job: EvalJob;
    try {
      job = parseEvalJob(lease.job.workflow, lease.job.message);
    } catch (error) {
      await lease.fail({ name: "EvalJobError", message: (error as Error).message });
      summary.failed += 1;
      options.onSettled?.(lease.job.runId, "failed");
      return;
    }
    const scenario = scenarioById(job.scenario);
    if (!scenario) {
      const error = new EvalJobError(
        `No scenario '${job.scenario}' in this worker's eval (an older checkout?)`,
      );
      await lease.fail({ name: error.name, message: error.message });
      summary.failed += 1;
      options.onSettled?.(job.key, "failed");
      return;
    }
    let session: BackendSession;
    try {
      session = await sessionFor(job);
    } catch (error) {
      await lease.release().catch(() => {});
      throw new EvalWorkerBackendError(job.backend, error);
    }
    // A harness failure is the run's outcome (an error row), as in a local batch.
    const outcome = await executeTask(
      { key: job.key, scenario, config: job.config, runIndex: job.runIndex, seed: job.seed },
      session,
      job.stream,
    );
    try {
      await lease.complete(outcome);
      summary.completed += 1;
      options.onSettled?.(job.key, "completed");
    } catch (error) {
      // The lease went to another worker (this one stalled past its lock): its run counts.
      if (!(error instanceof LeaseLostError)) throw error;
      options.onSettled?.(job.key, "lost");
    }
  };

  const lane = async () => {
    while (!stopped.aborted) {
      const lease = await queue.take(workerId);
      if (lease) {
        await work(lease);
        continue;
      }
      if (options.exitWhenIdle) return;
      await idle(options.queue, stopped);
    }
  };

  try {
    await Promise.all(
      Array.from({ length: Math.max(1, options.concurrency ?? 1) }, () =>
        lane().catch((error: unknown) => {
          // One lane's failure stops the others after their runs under way.
          failure ??= error;
          stop.abort(error);
        }),
      ),
    );
  } finally {
    for (const session of sessions.values()) await (await session.catch(() => null))?.close();
    await queue.close();
  }
  if (failure) throw failure;
  return summary;
}

/** Until the engine says work arrived, a poll interval passed, or the worker stops. */
async function idle(evalQueue: EvalQueue, signal: AbortSignal): Promise<void> {
  const wait = new AbortController();
  const onStop = () => wait.abort();
  signal.addEventListener("abort", onStop, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const poll = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, IDLE_POLL_MS);
    wait.signal.addEventListener("abort", () => resolve(), { once: true });
  });
  try {
    await Promise.race([poll, evalQueue.queue.waitForWork?.(wait.signal).catch(() => {}) ?? poll]);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", onStop);
    wait.abort();
  }
}
