/**
 * What the BullMQ run queue needs from the store under BullMQ beyond BullMQ's own API: writes
 * fenced on the job's lock token, lock renewal that also reports a cancel, and the cancel mark.
 * BullMQ checks neither the lock on `updateData` nor stops a worker whose lock was lost, so each
 * store does these in one atomic step against BullMQ's own layout: a Lua script on Redis
 * (`redis-store.ts`), one SQL statement on PostgreSQL (`postgres-store.ts`).
 */
import type { Job } from "bullmq";
import type { ApprovalState } from "../../core/approval.ts";
import type { RunJob, StoredCheckpoint } from "../run-queue.ts";

/** What the job's `data` holds: the run's job, its last checkpoint, its last error, its approval. */
export interface JobData extends RunJob {
  /** Milliseconds, with the producer's enqueue order in the fraction (runs of one millisecond stay in order). */
  enqueuedAt?: number;
  checkpoint?: StoredCheckpoint;
  error?: { name: string; message: string };
  /** The calls the run parked for and the decisions taken (docs/decisions/017). */
  approval?: ApprovalState;
}

/** A fenced step's outcome: done, the lock is not this token's (expired or taken over), or the run was cancelled. */
export type FencedOutcome = "ok" | "lost" | "cancelled";

/** The store under one BullMQ queue (internal to the BullMQ engine). */
export interface JobStore {
  /** Where it lives, for messages. */
  readonly address: string;
  /** Replace the job's `data` with `data` (JSON; undefined only checks) while `token` holds its unexpired lock. */
  save(runId: string, token: string, data: string | undefined): Promise<FencedOutcome>;
  /** Extend the job's lock by `lockMs` while `token` holds it. */
  renew(runId: string, token: string, lockMs: number): Promise<FencedOutcome>;
  /** Mark a run cancelled unless it finished: "missing", "finished" or "marked". */
  cancel(runId: string): Promise<"missing" | "finished" | "marked">;
  /**
   * Ready a finished run for a retry: remove the cancel mark and what BullMQ keeps of its stalls
   * (the stall count and the deferred failure that would fail it again at once).
   */
  clearForRetry(runId: string): Promise<void>;
  /** Whether each job carries the cancel mark. */
  cancelled(jobs: readonly Job[]): Promise<boolean[]>;
  /**
   * When each job was marked cancelled (ms), undefined when it carries no mark or one set before
   * marks held their time: a run cancelled while it waited has no `finishedOn` until a taker settles it.
   */
  cancelTimes(jobs: readonly Job[]): Promise<(number | undefined)[]>;
  /**
   * How many jobs wait on BullMQ's plain (unprioritised) wait list: forge adds every run with a
   * priority, so these are runs BullMQ's stall check put back there (Redis; PostgreSQL keeps the
   * priority of a stalled job and answers 0 without asking).
   */
  unprioritisedWaiting(): Promise<number>;
  /** The token that holds the job's unexpired lock, if any. */
  lockHolder(runId: string): Promise<string | undefined>;
  /** Release the store's own connection. */
  close(): Promise<void>;
}
