/**
 * A worker's lease on one run of the embedded queue: every write through it is fenced (the lease
 * still the run's, the run still active, the directory still this process's), and a write that
 * fails (a full disk) gives the lease up, so the queue's next take puts the run back to waiting.
 */

import { LeaseLostError, type RunJob, type RunLease, type StoredCheckpoint } from "../run-queue.ts";
import type { StoredRun } from "./files.ts";

/** What a lease needs from its queue. */
export interface LeaseHost {
  /** The run as this process last wrote or read it. */
  current(runId: string): StoredRun | undefined;
  isClosed(): boolean;
  /** Throws `QueueFencedError` unless this process still holds the directory. */
  assertHolder(runId: string): void;
  /** Write the run's file (fenced again just before). */
  write(run: StoredRun): void;
  /** Carry out the requests clients left (cancel, prune): done at each checkpoint. */
  takeRequests(): void;
  /** The lease ended (settled, or given up): it no longer holds its run. */
  end(runId: string, controller: AbortController): void;
  /** A write through the lease failed: the run waits again at the next take. */
  abandon(runId: string, error: Error): void;
  /** Wake idle workers: a run waits again. */
  notifyWork(): void;
}

/** The lease on `run`, taken with `token`; `controller` aborts its signal. */
export function createEmbeddedLease(
  host: LeaseHost,
  run: StoredRun,
  token: string,
  controller: AbortController,
): RunLease {
  const { runId } = run;
  // Set when a write through this lease failed: the run is left to the queue's recovery.
  let abandoned: Error | undefined;
  // Fenced: only the lease's holder may write, only while the run is active under it, and only
  // while this process still holds the directory (checked again just before each write).
  const owned = (): StoredRun => {
    const current = host.current(runId);
    if (host.isClosed()) throw new LeaseLostError(runId, "the queue closed");
    if (abandoned) throw new LeaseLostError(runId, `a write failed (${abandoned.message})`);
    host.assertHolder(runId);
    if (current?.lease !== token || current.status !== "active") {
      throw new LeaseLostError(runId, current ? `the run is ${current.status}` : "the run is gone");
    }
    return current;
  };
  // A write that fails (not a refused one) leaves the run active with nobody on it: the lease is
  // given up, its run stops, and the next take puts it back to waiting.
  const guarded = <T>(write: () => T): T => {
    try {
      return write();
    } catch (error) {
      if (!(error instanceof LeaseLostError) && !abandoned) {
        abandoned = error as Error;
        host.end(runId, controller);
        host.abandon(runId, abandoned);
        controller.abort(error);
      }
      throw error;
    }
  };
  // Settle the run: `update` over it, the lease dropped; `waiting` wakes idle workers.
  const settle = (update: Partial<StoredRun>) => {
    guarded(() => {
      const { lease: _lease, ...rest } = owned();
      host.write({ ...rest, ...update });
      host.end(runId, controller);
    });
    if (update.status === "waiting") host.notifyWork();
  };
  const job: RunJob = {
    runId,
    workflow: run.workflow,
    message: run.message,
    priority: run.priority,
    ...(run.promptVars && { promptVars: run.promptVars }),
    ...(run.traceparent && { traceparent: run.traceparent }),
  };
  return {
    job,
    checkpoint: run.checkpoint,
    attempts: run.attempts,
    approval: run.approval,
    signal: controller.signal,
    saveCheckpoint: async (checkpoint: StoredCheckpoint) =>
      guarded(() => {
        owned();
        // A client's cancel reaches an active run at its next checkpoint, and a client waiting on
        // a prune hears back while runs are long.
        host.takeRequests();
        host.write({ ...owned(), checkpoint });
      }),
    complete: async (result: unknown) =>
      settle({ status: "completed", result: result ?? null, finishedAt: Date.now() }),
    fail: async (error, { retry } = { retry: false }) =>
      settle(retry ? { status: "waiting", error } : { status: "failed", error, finishedAt: Date.now() }),
    release: async () => settle({ status: "waiting" }),
    park: async (approval) => settle({ status: "awaiting_approval", approval }),
  };
}
