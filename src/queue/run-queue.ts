/**
 * Durable runs on a queue: the engine-neutral interface. A producer enqueues runs (a workflow
 * name, the user message, a run id that makes enqueueing idempotent); workers take them one
 * lease at a time, run them with `WorkflowRunner` and write every checkpoint back through their
 * lease, so a run resumes from its last checkpoint on another worker after a crash. Two engines
 * implement it: the embedded one (in-process, a JSON file per run) and BullMQ (on Redis or
 * PostgreSQL).
 */
import { z } from "zod";
import { type ApprovalState, decideApprovals, decisionsFor } from "../core/approval.ts";
import { ApprovalNotPendingError, ApprovalRunClosedError, ForgeError } from "../core/errors.ts";

/**
 * Where a run stands. `awaiting_approval`: parked until a person decides its pending calls
 * (`RunQueue.approve` / `deny`); it holds no worker lane and no lease.
 */
export type RunStatus = "waiting" | "active" | "awaiting_approval" | "completed" | "failed" | "cancelled";

/** What a producer asks for. */
export interface EnqueueOptions {
  /** The run's id and the job's: enqueueing the same id twice is a no-op. Default: a random id. */
  runId?: string;
  /** Higher runs first; FIFO within a priority. Default 0. */
  priority?: number;
  promptVars?: Record<string, string>;
  /**
   * The W3C `traceparent` of the trace the run belongs to (the producer's span, e.g. the request
   * that enqueued it): a worker with `tracing` starts the run's span under it, in whatever process
   * takes the run. Default: none (the run starts a trace of its own).
   */
  traceparent?: string;
}

/** A run's job: what a worker needs to start it. JSON. */
export interface RunJob {
  runId: string;
  workflow: string;
  message: string;
  priority: number;
  promptVars?: Record<string, string>;
  /** The trace the run was enqueued in (`EnqueueOptions.traceparent`). */
  traceparent?: string;
}

/** A checkpoint as stored: the persisted snapshot and its meta (see `CheckpointMeta`). JSON. */
export interface StoredCheckpoint {
  snapshot: unknown;
  meta: {
    seq: number;
    workflow: string;
    definitionHash: string;
    machineVersion: number;
    reason: string;
    runId: string;
    iteration: number;
    callId?: string;
    /**
     * The W3C `traceparent` of the run's span when the checkpoint was written (a worker with
     * `tracing`): the attempt that resumes from it, in any process, continues that trace.
     */
    traceparent?: string;
  };
}

/** Everything known about a run. JSON. */
export interface RunRecord extends RunJob {
  status: RunStatus;
  /** Leases taken so far (1 for a run that never crashed); `retry` starts the count again. */
  attempts: number;
  checkpoint?: StoredCheckpoint;
  /** The terminal tool's value, once completed. */
  result?: unknown;
  /** Why it failed: the typed error's name and message. */
  error?: { name: string; message: string };
  /**
   * The calls the run parked for and the decisions taken on them (status `awaiting_approval`
   * while some are undecided); kept after the run goes on, as a record of who was asked what.
   */
  approval?: ApprovalState;
  enqueuedAt: number;
  finishedAt?: number;
}

/**
 * A worker's hold on one run. Every write goes through it and is fenced: it succeeds only while
 * the lease is still this worker's (a worker paused past its lease and woken up must not write
 * over the run's new owner), else it rejects with `LeaseLostError` and the worker cancels the run.
 */
export interface RunLease {
  readonly job: RunJob;
  /** The last checkpoint when the run was taken over from a crashed worker; undefined for a fresh run. */
  readonly checkpoint: StoredCheckpoint | undefined;
  readonly attempts: number;
  /** The run's approval state when it parked before (its decisions resume it); undefined if it never did. */
  readonly approval: ApprovalState | undefined;
  /** Aborted when the lease is lost (or the run cancelled): stop the run at once. */
  readonly signal: AbortSignal;
  saveCheckpoint(checkpoint: StoredCheckpoint): Promise<void>;
  /**
   * Park the run until a person decides (its last checkpoint is the snapshot it waits in): status
   * `awaiting_approval`, the lease ends and the lane is free. `approve` / `deny` make it wait again.
   */
  park(approval: ApprovalState): Promise<void>;
  complete(result: unknown): Promise<void>;
  fail(error: { name: string; message: string }, options?: { retry: boolean }): Promise<void>;
  /** Hand the run back (graceful shutdown): it waits again and resumes from its last checkpoint. */
  release(): Promise<void>;
}

/** A queue of durable runs. */
export interface RunQueue {
  /** Add a run; with an existing `runId`, returns that run's record unchanged. */
  enqueue(workflow: string, message: string, options?: EnqueueOptions): Promise<RunRecord>;
  /**
   * Take the next waiting run (highest priority, oldest first), or null when none waits. A run
   * that waits again (handed back, failed to be retried, retried, decided) goes ahead of the runs
   * of its priority that were enqueued after it and wait for their first take; among runs that
   * wait again the order is the engine's (embedded: enqueue order; BullMQ: its own, not promised).
   * One a dead worker left keeps its priority; its place among the runs of that priority is the
   * engine's (embedded: its enqueue order; BullMQ on Redis: the front, on PostgreSQL: the back).
   */
  take(workerId: string): Promise<RunLease | null>;
  get(runId: string): Promise<RunRecord | undefined>;
  list(filter?: { status?: RunStatus }): Promise<RunRecord[]>;
  /** Resolve with the run's result once it completed; reject with its error when it failed or was cancelled. */
  result(runId: string, options?: { signal?: AbortSignal }): Promise<unknown>;
  /** Cancel a waiting or active run (an active one stops at its next checkpoint). */
  cancel(runId: string): Promise<void>;
  /**
   * Put a failed or cancelled run back to waiting: it resumes from its last checkpoint. Rejects
   * with a `RangeError` for an unknown run or one in another status. An embedded queue opened as a
   * client only asks its worker, which carries it out at its next take: it resolves with the run
   * as it stands. The run gets a fresh allowance of backend retries (`attempts` starts again).
   */
  retry(runId: string): Promise<RunRecord>;
  /**
   * Approve a parked run's pending call (`callId`), or every undecided one when none is named.
   * Once each pending call is decided the run waits again and any worker resumes it: approved
   * calls run (an `unsafe` one at most once, as ever), denied ones are answered with their reason.
   * Rejects with `ApprovalNotPendingError` (no such pending call), `ApprovalAlreadyDecidedError`
   * (decided before) or `ApprovalRunClosedError` (the run finished or was cancelled), and a
   * `RangeError` for an unknown run. Resolves with the run as it stands.
   * @example
   * await queue.approve("order-17", { callId: "0k3x9a2bq" });
   */
  approve(runId: string, options?: DecideOptions): Promise<RunRecord>;
  /** Deny a parked run's pending call (or every undecided one): the model reads `reason`. As `approve`. */
  deny(runId: string, options?: DecideOptions): Promise<RunRecord>;
  /**
   * Remove finished runs: those whose status is one of `status` (default: completed, failed and
   * cancelled) and that finished at least `olderThanMs` ago (`finishedAt <= now - olderThanMs`; 0
   * removes every finished run of those statuses). Waiting and active runs are never touched.
   * Resolves with how many runs it removed; rejects with a `RangeError` for bad options.
   *
   * Enqueueing a run id is idempotent only while its record is kept: once pruned, the same id
   * enqueues again as a new run. An embedded queue opened as a client asks the worker that holds
   * the directory and waits for its answer (or prunes itself when no worker holds it).
   * @example
   * // Drop runs that finished more than a week ago.
   * const removed = await queue.prune({ olderThanMs: 7 * 24 * 3_600_000 });
   */
  prune(options: PruneOptions): Promise<number>;
  close(): Promise<void>;
}

/** Which call `approve` / `deny` decide, and why. */
export interface DecideOptions {
  /** The pending call; default every call of the run still undecided. */
  callId?: string;
  /** Why (for a denial the model reads it as the call's tool result). */
  reason?: string;
}

/**
 * A queued run's approval state with a person's decision added: the typed errors of `approve` /
 * `deny` for a run that is over, waits for nothing, or a call not pending or decided before.
 * Shared by every engine.
 */
export function decideQueuedRun(
  run: Pick<RunRecord, "runId" | "status" | "approval">,
  approved: boolean,
  options: DecideOptions = {},
): ApprovalState {
  if (run.status === "completed" || run.status === "failed" || run.status === "cancelled") {
    throw new ApprovalRunClosedError(run.runId, run.status);
  }
  if (!run.approval) throw new ApprovalNotPendingError(options.callId ?? "(any)", []);
  const decisions = decisionsFor(run.approval, approved, options);
  if (decisions.length === 0) {
    throw new ApprovalNotPendingError(options.callId ?? "(any)", []);
  }
  return decideApprovals(run.approval, decisions);
}

/** The statuses of a finished run: the ones `prune` removes. */
export const FINISHED_STATUSES = ["completed", "failed", "cancelled"] as const;

/** A finished run's status. */
export type FinishedStatus = (typeof FINISHED_STATUSES)[number];

/** What `RunQueue.prune` removes. */
export interface PruneOptions {
  /** Remove runs that finished at least this many milliseconds ago: an integer, 0 or more. */
  olderThanMs: number;
  /** Only runs in these statuses (default: all three finished ones). */
  status?: readonly FinishedStatus[];
}

/**
 * Check `prune`'s options: `olderThanMs` a finite integer >= 0, `status` a non-empty list of
 * finished statuses. Returns them with the default filled in; throws a `RangeError` saying what is wrong.
 */
export function assertPruneOptions(options: PruneOptions): {
  olderThanMs: number;
  status: ReadonlySet<FinishedStatus>;
} {
  const olderThanMs = options?.olderThanMs;
  if (typeof olderThanMs !== "number" || !Number.isSafeInteger(olderThanMs) || olderThanMs < 0) {
    throw new RangeError(
      `prune: olderThanMs must be a whole number of milliseconds, 0 or more, got ${String(olderThanMs)}`,
    );
  }
  const status = options.status ?? FINISHED_STATUSES;
  if (!Array.isArray(status) || status.length === 0) {
    throw new RangeError(
      `prune: status must be a non-empty list of ${FINISHED_STATUSES.join(", ")}, got ${JSON.stringify(status)}`,
    );
  }
  for (const entry of status) {
    if (!FINISHED_STATUSES.includes(entry)) {
      throw new RangeError(
        `prune: status ${JSON.stringify(entry)} is not a finished status; prune removes only ${FINISHED_STATUSES.join(", ")} runs (waiting and active runs are never pruned)`,
      );
    }
  }
  return { olderThanMs, status: new Set(status) };
}

/**
 * Whether `prune` removes a run: its status is one of `status` and it finished at or before
 * `cutoff` (ms). A run with no `finishedAt` is not finished yet, whatever its status says.
 */
export function isPrunable(
  run: Pick<RunRecord, "status" | "finishedAt">,
  status: ReadonlySet<FinishedStatus>,
  cutoff: number,
): boolean {
  return status.has(run.status as FinishedStatus) && run.finishedAt !== undefined && run.finishedAt <= cutoff;
}

/** Priorities a run may have, on every engine: integers strictly between -2^20 and 2^20. */
export const PRIORITY_LIMIT = 2 ** 20;

const RUN_ID = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * A run id, by the rules every engine can keep (they are BullMQ's job-id rules): 1-128 characters
 * of A-Z a-z 0-9 _ . - and not an integer. It also names files, so nothing else, and not `.` or
 * `..`. Checked where an id is written and wherever one is read back (a run file's name and
 * content, a request file's name).
 */
export const RunIdSchema = z
  .string()
  .regex(RUN_ID)
  .refine((runId) => `${Number.parseInt(runId, 10)}` !== runId && runId !== "." && runId !== "..");

/** Check a run id ({@link RunIdSchema}); throws a `RangeError` saying what a run id may be. */
export function assertRunId(runId: string): string {
  if (!RunIdSchema.safeParse(runId).success) {
    throw new RangeError(
      `runId must be 1-128 characters of A-Z a-z 0-9 _ . -, not an integer and not . or .., got ${JSON.stringify(runId)}`,
    );
  }
  return runId;
}

/**
 * Names BullMQ gives its own keys beside a queue's jobs on Redis (`<prefix>:<name>:failed` is the
 * failed set, and a job `failed` would be the hash `<prefix>:<name>:failed`): a run with one of
 * them as its id breaks the queue's scripts (WRONGTYPE). Refused as new run ids on every engine.
 */
export const RESERVED_RUN_IDS: ReadonlySet<string> = new Set([
  "active",
  "completed",
  "de",
  "delayed",
  "events",
  "failed",
  "id",
  "jobschedulers",
  "limiter",
  "marker",
  "meta",
  "metrics",
  "paused",
  "pc",
  "prioritized",
  "priority",
  "repeat",
  "stalled",
  "stalled-check",
  "wait",
  "waiting-children",
]);

/**
 * Check the id of a run about to be enqueued: a run id ({@link assertRunId}) and none of
 * {@link RESERVED_RUN_IDS}. Throws a `RangeError` saying which ids are reserved. (Only new runs
 * are refused: a run stored before under such an id can still be read, cancelled or pruned.)
 */
export function assertNewRunId(runId: string): string {
  assertRunId(runId);
  if (RESERVED_RUN_IDS.has(runId)) {
    throw new RangeError(
      `runId ${JSON.stringify(runId)} is reserved: BullMQ names its own keys ${[...RESERVED_RUN_IDS].join(", ")}; choose another run id`,
    );
  }
  return runId;
}

const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * Check a W3C `traceparent` given with a run (version 00, lower-case hex, ids not all zero).
 * Throws a `RangeError` showing the expected shape.
 */
export function assertTraceparent(traceparent: string): string {
  if (typeof traceparent !== "string" || !TRACEPARENT.test(traceparent)) {
    throw new RangeError(
      `traceparent must be a W3C traceparent such as 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01, got ${JSON.stringify(traceparent)}`,
    );
  }
  return traceparent;
}

/** Check a priority: an integer strictly between -2^20 and 2^20 (higher runs first). */
export function assertPriority(priority: number): number {
  if (!Number.isInteger(priority) || priority <= -PRIORITY_LIMIT || priority >= PRIORITY_LIMIT) {
    throw new RangeError(
      `priority must be an integer between ${-PRIORITY_LIMIT + 1} and ${PRIORITY_LIMIT - 1}, got ${priority}`,
    );
  }
  return priority;
}

/** The engine a queue string names; a URL of another scheme is refused, not taken for a directory. */
export function engineOf(queue: string): "redis" | "postgres" | "embedded" {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(queue)?.[1]?.toLowerCase();
  if (scheme === undefined) return "embedded";
  if (scheme === "redis" || scheme === "rediss") return "redis";
  if (scheme === "postgres" || scheme === "postgresql") return "postgres";
  throw new RangeError(
    `A run queue is a redis://, rediss://, postgres:// or postgresql:// URL or a directory, got ${JSON.stringify(urlWithoutPassword(queue))}`,
  );
}

/**
 * Default largest payload of a run, on every engine: 1 MiB of serialized input (the JSON of its
 * workflow name, message and prompt variables). A worker holds a run's payload many times over
 * while it runs it (a 20 MiB message cost a BullMQ worker about 520 MB), so larger inputs belong in
 * a file or a store the tools read, with a reference in the message.
 */
export const DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024;

/** An enqueue refused because the run's serialized input is over the queue's `maxPayloadBytes`. */
export class RunPayloadTooLargeError extends ForgeError {
  /** The queue's limit, in bytes of serialized input. */
  readonly limitBytes: number;
  /** The refused run's serialized input, in bytes. */
  readonly sizeBytes: number;
  /** The run id it would have had. */
  readonly runId: string;
  constructor(runId: string, sizeBytes: number, limitBytes: number) {
    super(
      `Run ${runId} not enqueued: its payload is ${sizeBytes} bytes of serialized input (workflow, message, promptVars), over the queue's limit of ${limitBytes} bytes (maxPayloadBytes). Pass a reference to large inputs in the message, or open the queue with a larger maxPayloadBytes.`,
    );
    this.limitBytes = limitBytes;
    this.sizeBytes = sizeBytes;
    this.runId = runId;
  }
}

/**
 * Check a queue's `maxPayloadBytes` option: a positive integer, or `Infinity` for no limit
 * (default {@link DEFAULT_MAX_PAYLOAD_BYTES}). Throws a `RangeError` otherwise.
 */
export function assertMaxPayloadBytes(maxPayloadBytes: number | undefined): number {
  const limit = maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  if (limit !== Number.POSITIVE_INFINITY && (!Number.isSafeInteger(limit) || limit <= 0)) {
    throw new RangeError(
      `maxPayloadBytes must be a positive whole number of bytes (or Infinity for no limit), got ${String(maxPayloadBytes)}`,
    );
  }
  return limit;
}

/**
 * The bytes of a run's serialized input: the UTF-8 JSON of its workflow, message and prompt
 * variables. Throws `RunPayloadTooLargeError` when they are over `limitBytes`.
 */
export function assertPayloadSize(
  runId: string,
  input: { workflow: string; message: string; promptVars?: Record<string, string> | undefined },
  limitBytes: number,
): number {
  const sizeBytes = Buffer.byteLength(
    JSON.stringify({ workflow: input.workflow, message: input.message, promptVars: input.promptVars }),
  );
  if (sizeBytes > limitBytes) throw new RunPayloadTooLargeError(runId, sizeBytes, limitBytes);
  return sizeBytes;
}

/** A call on a run queue that was closed (`close()`): open the queue again to use it. */
export class RunQueueClosedError extends ForgeError {
  constructor(detail = "") {
    super(
      `The run queue is closed${detail ? ` (${detail})` : ""}: open it again (createRunQueue) to enqueue, take or decide runs.`,
    );
  }
}

/**
 * A run queue asked for something its state does not allow: a client-mode embedded queue asked to
 * take runs, a directory another process holds, a prune the worker refused. The message says which
 * and what to do.
 */
export class RunQueueStateError extends ForgeError {}

/** A write through a lease that is no longer the worker's. */
export class LeaseLostError extends ForgeError {
  readonly runId: string;
  constructor(runId: string, detail: string) {
    super(`Run ${runId}: this worker's lease is gone (${detail}); the run belongs to another worker now.`);
    this.runId = runId;
  }
}

/**
 * A write refused because another process took the embedded queue's directory: this process's
 * lock went stale (it was frozen, or its disk stalled, past the lock's 10 s) and the new holder
 * bumped the directory's epoch. Every later write and take of this queue throws it; a worker stops
 * its lanes, and the runs it held belong to the new holder. A `LeaseLostError`: a lease's write
 * refused this way rejects with it.
 */
export class QueueFencedError extends LeaseLostError {
  /** The epoch this process took the directory at. */
  readonly epoch: number;
  /** The directory's epoch now (undefined when it could not be read). */
  readonly currentEpoch: number | undefined;
  constructor(dir: string, epoch: number, currentEpoch: number | undefined, runId = "") {
    super(runId, "");
    this.name = "QueueFencedError";
    this.message = `The run queue in ${dir} was taken over by another process (this process took it at epoch ${epoch}, it is at ${currentEpoch ?? "an unreadable epoch"} now): ${runId ? `run ${runId}'s write is refused and ` : "writes are refused and "}its runs belong to the new holder.`;
    this.epoch = epoch;
    this.currentEpoch = currentEpoch;
  }
}

/** A connection URL for messages: its password (user info or `?password=`), if any, replaced by `***`. */
export function urlWithoutPassword(address: string): string {
  try {
    const url = new URL(address);
    if (url.password) url.password = "***";
    if (url.searchParams.has("password")) url.searchParams.set("password", "***");
    return url.toString();
  } catch {
    return "(an unparsable URL)";
  }
}
