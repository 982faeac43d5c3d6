/**
 * The embedded run queue: no server, one process. Each run is a JSON file in `dir/runs/`,
 * replaced durably (temp file, fsync, rename, fsync of the directory) on every change, so a
 * `kill -9` or a power loss leaves every run as its last completed write. A lock file keeps a
 * second process off the same directory, and every write is fenced on the directory's epoch (see
 * `lock.ts`); on open, runs a dead process left active go back to waiting and resume from
 * their last checkpoint. A run file that cannot be read is moved aside to `dir/quarantine/`.
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { isFullyDecided } from "../../core/approval.ts";
import {
  assertMaxPayloadBytes,
  assertNewRunId,
  assertPayloadSize,
  assertPriority,
  assertPruneOptions,
  assertRunId,
  assertTraceparent,
  type DecideOptions,
  decideQueuedRun,
  type EnqueueOptions,
  LeaseLostError,
  type PruneOptions,
  type QueueFencedError,
  RunIdSchema,
  type RunLease,
  type RunQueue,
  RunQueueClosedError,
  RunQueueStateError,
  type RunRecord,
  type RunStatus,
} from "../run-queue.ts";
import { Waiters } from "../waiters.ts";
import {
  createFileDurably,
  isRunId,
  listQuarantined,
  type QuarantinedFile,
  quarantineFile,
  readRunFile,
  type StoredRun,
  writeFileDurably,
} from "./files.ts";
import { createEmbeddedLease, type LeaseHost } from "./lease.ts";
import { DirectoryLock } from "./lock.ts";
import { answerPruneRequests, askToPrune, pruneRuns } from "./prune.ts";

/** Options of `createEmbeddedQueue`. */
export interface EmbeddedQueueOptions {
  /** The directory that holds the runs (created if missing). One process at a time. */
  dir: string;
  /**
   * How long to wait for the directory's lock (default 0: fail at once). A lock left by a killed
   * process goes stale after 10 s; waiting that long lets a restarted process take over.
   */
  waitForLockMs?: number;
  /**
   * `worker` (default): takes the directory's lock and works runs. `client`: no lock, for a
   * producer in another process (`forge enqueue`, `forge runs`) while a worker holds the directory:
   * it adds runs as new files, reads them from disk, and asks the worker to cancel, retry, prune,
   * approve or deny through a request file; it cannot take runs.
   */
  mode?: "worker" | "client";
  /**
   * Hears what the queue set aside rather than failing on: a run file it could not read (moved to
   * `dir/quarantine/`), a stray file in `cancel/` or `retry/`, a run whose write failed (it waits
   * again), the directory taken over by another process. Default: one line on stderr.
   */
  onWarning?: (message: string) => void;
  /**
   * Largest serialized input of a run (the JSON of workflow, message and promptVars) that
   * `enqueue` accepts, in bytes (default 1 MiB, `DEFAULT_MAX_PAYLOAD_BYTES`; `Infinity`: none).
   * Larger runs are refused with `RunPayloadTooLargeError`.
   */
  maxPayloadBytes?: number;
}

/** The embedded queue: a `RunQueue`, plus what it moved aside. */
export interface EmbeddedRunQueue extends RunQueue {
  /** The files moved aside to `dir/quarantine/` because they could not be read, oldest first. */
  quarantined(): Promise<QuarantinedFile[]>;
  /** Resolves when a run may be waiting (a worker idles on it). */
  waitForWork(signal?: AbortSignal): Promise<void>;
}

/**
 * Open (or create) an embedded queue in `dir`. Throws when another live process holds it.
 * @example
 * const queue = await createEmbeddedQueue({ dir: ".forge/runs" });
 * await queue.enqueue("weather", "Weather in Paris?", { runId: "order-17" });
 */
export async function createEmbeddedQueue(options: EmbeddedQueueOptions): Promise<EmbeddedRunQueue> {
  const runsDir = join(options.dir, "runs");
  for (const sub of ["runs", "cancel", "retry", "prune", "decide", "quarantine"]) {
    mkdirSync(join(options.dir, sub), { recursive: true });
  }
  const maxPayloadBytes = assertMaxPayloadBytes(options.maxPayloadBytes);
  const warn =
    options.onWarning ?? ((message: string) => console.warn(`forge queue ${options.dir}: ${message}`));
  if (options.mode === "client") {
    const queue = new EmbeddedQueue(runsDir, undefined, warn, maxPayloadBytes);
    queue.recover();
    return queue;
  }
  // The queue is made first so that a takeover noticed at any time reaches its leases.
  let queue: EmbeddedQueue | undefined;
  const lock = new DirectoryLock(options.dir, (error) => queue?.fence(error));
  try {
    await lock.acquire(options.waitForLockMs ?? 0);
  } catch (error) {
    throw new RunQueueStateError(
      `The run queue in ${options.dir} is open in another process (${(error as Error).message}). Stop that process, or give this one another directory.`,
      { cause: error },
    );
  }
  queue = new EmbeddedQueue(runsDir, lock, warn, maxPayloadBytes);
  try {
    queue.recover();
  } catch (error) {
    await lock.release();
    throw error;
  }
  return queue;
}

class EmbeddedQueue implements EmbeddedRunQueue {
  readonly #dir: string;
  readonly #queueDir: string;
  /** The directory's lock: a worker's (fenced writes); undefined in a client. */
  readonly #lock: DirectoryLock | undefined;
  readonly #warn: (message: string) => void;
  readonly #maxPayloadBytes: number;
  readonly #runs = new Map<string, StoredRun>();
  /** The live leases, by run: an active run without one was abandoned by a failed write. */
  readonly #controllers = new Map<string, AbortController>();
  readonly #waiters = new Waiters();
  /** Stray request files already warned about (warned once, not at every take). */
  readonly #strays = new Set<string>();
  #seq = 0;
  #seqMs = 0;
  #closed = false;
  /** After a failed write, no run is taken until then: a full disk is not retried in a hot loop. */
  #pausedUntil = 0;

  constructor(
    dir: string,
    lock: DirectoryLock | undefined,
    warn: (message: string) => void,
    maxPayloadBytes: number,
  ) {
    this.#dir = dir;
    this.#maxPayloadBytes = maxPayloadBytes;
    this.#queueDir = join(dir, "..");
    this.#lock = lock;
    this.#warn = warn;
  }

  get #mode(): "worker" | "client" {
    return this.#lock ? "worker" : "client";
  }

  /** Now, in ms, with this process's order within one millisecond in the fraction. */
  #enqueueTime(): number {
    const now = Date.now();
    this.#seq = now === this.#seqMs ? this.#seq + 1 : 0;
    this.#seqMs = now;
    return now + Math.min(this.#seq, 999) / 1000;
  }

  /** Load every run; in a worker, the ones a dead process held go back to waiting. */
  recover(): void {
    this.#scan();
    if (this.#mode === "client") return;
    for (const run of this.#runs.values()) {
      if (run.status !== "active") continue;
      const { lease: _lease, ...rest } = run;
      this.#write({ ...rest, status: "waiting" });
    }
  }

  /**
   * Another process took the directory (this one was frozen past the lock's staleness): every
   * lease stops at once, idle lanes wake to find `take` refused, and nothing more is written.
   */
  fence(error: QueueFencedError): void {
    this.#warn(`${error.message} This worker stops.`);
    for (const controller of this.#controllers.values()) controller.abort(error);
    this.#controllers.clear();
    this.#waiters.notifyAll();
  }

  /** What this queue's leases write through. */
  readonly #leaseHost: LeaseHost = {
    current: (runId) => this.#runs.get(runId),
    isClosed: () => this.#closed,
    assertHolder: (runId) => this.#assertHolder(runId),
    write: (run) => this.#write(run),
    takeRequests: () => {
      this.#takeCancelRequests();
      this.#takeDecideRequests();
      this.#takePruneRequests();
    },
    end: (runId, controller) => {
      if (this.#controllers.get(runId) === controller) this.#controllers.delete(runId);
    },
    abandon: (runId, error) => {
      this.#pausedUntil = Date.now() + 1_000;
      this.#warn(
        `run ${runId}: a write failed (${error.message}); it will wait again and resume from its last checkpoint`,
      );
      this.#waiters.notify("enqueued");
    },
    notifyWork: () => this.#waiters.notify("enqueued"),
  };

  /** In a worker, throw `QueueFencedError` unless the directory is still this process's. */
  #assertHolder(runId?: string): void {
    this.#lock?.assertHeld(runId);
  }

  /**
   * Read run files this process has not seen (clients add runs as files); a client rereads all,
   * and forgets the runs whose files are gone (pruned). A file that cannot be read is quarantined.
   */
  #scan(): void {
    const seen = new Set<string>();
    for (const name of readdirSync(this.#dir)) {
      if (!name.endsWith(".json") || name.startsWith(".")) continue;
      const runId = name.slice(0, -".json".length);
      if (this.#mode === "worker" && this.#runs.has(runId)) continue;
      const run = this.#read(runId);
      if (run) seen.add(runId);
    }
    if (this.#mode === "client") {
      for (const runId of [...this.#runs.keys()]) if (!seen.has(runId)) this.#runs.delete(runId);
    }
  }

  /**
   * Read `runs/<runId>.json` into memory: the run, or undefined when there is none (deleted, or
   * unreadable and moved aside to `quarantine/` with a warning).
   */
  #read(runId: string): StoredRun | undefined {
    const path = join(this.#dir, `${runId}.json`);
    const read = isRunId(runId) ? readRunFile(path, runId) : { unreadable: "its name is not a run id" };
    if ("run" in read) {
      this.#runs.set(runId, read.run);
      return read.run;
    }
    this.#runs.delete(runId);
    if ("unreadable" in read) this.#quarantine(path, read.unreadable);
    return undefined;
  }

  #quarantine(path: string, reason: string): void {
    try {
      const moved = quarantineFile(this.#queueDir, path, reason);
      if (moved) this.#warn(`${moved.from} is unreadable (${reason}); moved aside to ${moved.path}`);
    } catch (error) {
      this.#warn(
        `${path} is unreadable (${reason}) and could not be moved aside: ${(error as Error).message}`,
      );
    }
  }

  /**
   * Read one run's file when it may have changed under this process: always in a client (the
   * worker writes it), in a worker only if unseen (a client added it). One file, not the directory:
   * enqueueing, getting or waiting on one run must not cost a read of every run (864 enqueues from a
   * client took 90 s that way while a worker was finishing runs).
   */
  #refresh(runId: string): StoredRun | undefined {
    if (this.#mode === "worker" && this.#runs.has(runId)) return this.#runs.get(runId);
    return this.#read(runId);
  }

  /**
   * The run ids of the request files clients left in `cancel/` or `retry/`, each file removed. A
   * file whose name is no run id (or that cannot be removed) is left alone, with one warning.
   */
  #takeRequests(kind: "cancel" | "retry"): string[] {
    this.#assertHolder();
    const dir = join(this.#queueDir, kind);
    const runIds: string[] = [];
    for (const name of readdirSync(dir)) {
      if (name.startsWith(".")) continue;
      try {
        if (!isRunId(name)) throw new Error("its name is not a run id");
        rmSync(join(dir, name));
        runIds.push(name);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
        this.#warnStray(`${kind}/${name}`, (error as Error).message);
      }
    }
    return runIds;
  }

  /** Say once (not at every take) that a request file is ignored. */
  #warnStray(path: string, reason: string): void {
    if (this.#strays.has(path)) return;
    this.#strays.add(path);
    this.#warn(`ignoring ${path}: ${reason}`);
  }

  /** A worker honours cancel requests clients left as files. */
  #takeCancelRequests(): void {
    for (const runId of this.#takeRequests("cancel")) {
      this.cancel(runId).catch((error: unknown) =>
        this.#warn(`cancel ${runId}: ${(error as Error).message}`),
      );
    }
  }

  /** A worker honours retry requests clients left as files (a run no longer retryable is left as it is). */
  #takeRetryRequests(): void {
    for (const runId of this.#takeRequests("retry")) this.retry(runId).catch(() => {});
  }

  async enqueue(workflow: string, message: string, options: EnqueueOptions = {}): Promise<RunRecord> {
    this.#assertOpen();
    const runId = assertNewRunId(options.runId ?? randomUUID());
    const priority = assertPriority(options.priority ?? 0);
    if (options.traceparent !== undefined) assertTraceparent(options.traceparent);
    assertPayloadSize(runId, { workflow, message, promptVars: options.promptVars }, this.#maxPayloadBytes);
    // Runs a client added are files this process may not have read yet (idempotent enqueue).
    const existing = this.#refresh(runId);
    if (existing) return publicRecord(existing);
    const run: StoredRun = {
      runId,
      workflow,
      message,
      priority,
      ...(options.promptVars && { promptVars: options.promptVars }),
      ...(options.traceparent && { traceparent: options.traceparent }),
      status: "waiting",
      attempts: 0,
      enqueuedAt: this.#enqueueTime(),
    };
    if (this.#mode === "client") {
      // Written whole to a file of its own, then linked to its name: an atomic exclusive create, so
      // a worker never reads half a run, and of two clients enqueueing one id only one wins.
      if (!createFileDurably(join(this.#dir, `${runId}.json`), JSON.stringify(run))) {
        return publicRecord(this.#refresh(runId) ?? run);
      }
      this.#runs.set(runId, run);
      return publicRecord(run);
    }
    this.#write(run);
    this.#waiters.notify("enqueued");
    return publicRecord(run);
  }

  async take(_workerId: string): Promise<RunLease | null> {
    this.#assertOpen();
    if (this.#mode === "client")
      throw new RunQueueStateError("A client-mode queue cannot take runs; open it as a worker");
    this.#assertHolder();
    if (Date.now() < this.#pausedUntil) return null;
    this.#scan();
    this.#recoverAbandoned();
    this.#takeCancelRequests();
    this.#takeRetryRequests();
    this.#takeDecideRequests();
    this.#takePruneRequests();
    const next = [...this.#runs.values()]
      .filter((run) => run.status === "waiting")
      .sort((a, b) => b.priority - a.priority || a.enqueuedAt - b.enqueuedAt)[0];
    if (!next) return null;
    const token = randomUUID();
    const run: StoredRun = { ...next, status: "active", lease: token, attempts: next.attempts + 1 };
    this.#write(run);
    const controller = new AbortController();
    this.#controllers.set(run.runId, controller);
    return createEmbeddedLease(this.#leaseHost, run, token, controller);
  }

  /**
   * Runs this process left active with no lease (a write through the lease failed: a full disk)
   * wait again, to resume from their last checkpoint, without a restart.
   */
  #recoverAbandoned(): void {
    for (const run of [...this.#runs.values()]) {
      if (run.status !== "active" || this.#controllers.has(run.runId)) continue;
      const { lease: _lease, ...rest } = run;
      this.#write({ ...rest, status: "waiting" });
      this.#warn(
        `run ${run.runId} waits again (its last write had failed); it resumes from its last checkpoint`,
      );
    }
  }

  async get(runId: string): Promise<RunRecord | undefined> {
    assertRunId(runId);
    const run = this.#refresh(runId);
    return run && publicRecord(run);
  }

  async list(filter: { status?: RunStatus } = {}): Promise<RunRecord[]> {
    this.#scan();
    return [...this.#runs.values()]
      .filter((run) => filter.status === undefined || run.status === filter.status)
      .sort((a, b) => a.enqueuedAt - b.enqueuedAt)
      .map(publicRecord);
  }

  async quarantined(): Promise<QuarantinedFile[]> {
    return listQuarantined(this.#queueDir);
  }

  async result(runId: string, options: { signal?: AbortSignal } = {}): Promise<unknown> {
    assertRunId(runId);
    for (;;) {
      this.#assertOpen();
      const run = this.#refresh(runId);
      if (!run) throw new RangeError(`No run ${runId} in this queue`);
      if (run.status === "completed") return run.result;
      if (run.status === "failed" || run.status === "cancelled") {
        const error = new Error(run.error?.message ?? `Run ${runId} was ${run.status}`);
        error.name = run.error?.name ?? (run.status === "cancelled" ? "WorkflowCancelledError" : "Error");
        throw error;
      }
      options.signal?.throwIfAborted();
      // A client sees the worker's writes on disk: it polls; a worker hears its own writes.
      await this.#waiters.next(runId, {
        signal: options.signal,
        ...(this.#mode === "client" && { timeoutMs: 100 }),
      });
    }
  }

  async cancel(runId: string): Promise<void> {
    assertRunId(runId);
    if (this.#mode === "client") {
      // The worker that holds the directory carries it out at its next take.
      writeFileDurably(join(this.#queueDir, "cancel", runId), "");
      return;
    }
    const run = this.#runs.get(runId);
    if (!run || run.status === "completed" || run.status === "failed" || run.status === "cancelled") return;
    const { lease: _lease, ...rest } = run;
    this.#write({
      ...rest,
      status: "cancelled",
      error: { name: "WorkflowCancelledError", message: `Run ${runId} was cancelled` },
      finishedAt: Date.now(),
    });
    this.#controllers.get(runId)?.abort(new LeaseLostError(runId, "the run was cancelled"));
    this.#controllers.delete(runId);
  }

  async retry(runId: string): Promise<RunRecord> {
    assertRunId(runId);
    this.#assertOpen();
    const run = this.#refresh(runId);
    if (!run) throw new RangeError(`No run ${runId} in this queue`);
    if (run.status !== "failed" && run.status !== "cancelled") {
      throw new RangeError(`Run ${runId} is ${run.status}: only a failed or cancelled run can be retried`);
    }
    if (this.#mode === "client") {
      // The worker that holds the directory carries it out at its next take.
      writeFileDurably(join(this.#queueDir, "retry", runId), "");
      return publicRecord(run);
    }
    // A failed run keeps its error until it settles again (as a backend retry does); a cancel's goes.
    const { lease: _lease, finishedAt: _finishedAt, result: _result, error, ...rest } = run;
    const waiting: StoredRun = {
      ...rest,
      // A fresh allowance of backend retries: the run failed because they ran out.
      attempts: 0,
      status: "waiting",
      ...(run.status === "failed" && error && { error }),
    };
    this.#write(waiting);
    this.#waiters.notify("enqueued");
    return publicRecord(waiting);
  }

  async approve(runId: string, options: DecideOptions = {}): Promise<RunRecord> {
    return this.#decide(runId, true, options);
  }

  async deny(runId: string, options: DecideOptions = {}): Promise<RunRecord> {
    return this.#decide(runId, false, options);
  }

  /**
   * A person's decision on a parked run: checked against the run as it stands (typed errors), then
   * kept; the last pending call decided puts the run back to waiting. A client checks against the
   * file and leaves the decision as a request file, which the worker carries out at its next take.
   */
  async #decide(runId: string, approved: boolean, options: DecideOptions): Promise<RunRecord> {
    assertRunId(runId);
    this.#assertOpen();
    const run = this.#refresh(runId);
    if (!run) throw new RangeError(`No run ${runId} in this queue`);
    const approval = decideQueuedRun(run, approved, options);
    if (this.#mode === "client") {
      const request = { runId, approved, ...options };
      writeFileDurably(join(this.#queueDir, "decide", `${randomUUID()}.json`), JSON.stringify(request));
      return publicRecord(run);
    }
    const { lease: _lease, ...rest } = run;
    const decided: StoredRun = {
      ...rest,
      approval,
      status: isFullyDecided(approval) ? "waiting" : "awaiting_approval",
    };
    this.#write(decided);
    if (decided.status === "waiting") this.#waiters.notify("enqueued");
    return publicRecord(decided);
  }

  /** A worker carries out the decisions clients left as files; one no longer valid is warned about. */
  #takeDecideRequests(): void {
    this.#assertHolder();
    const dir = join(this.#queueDir, "decide");
    for (const name of readdirSync(dir)) {
      if (name.startsWith(".") || !name.endsWith(".json")) continue;
      const path = join(dir, name);
      let request: { runId: string; approved: boolean; callId?: string; reason?: string };
      try {
        request = decideRequestSchema.parse(JSON.parse(readFileSync(path, "utf8")));
        rmSync(path);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
        this.#warnStray(`decide/${name}`, (error as Error).message);
        continue;
      }
      const { runId, approved, ...options } = request;
      this.#decide(runId, approved, options).catch((error: unknown) =>
        this.#warn(`${approved ? "approve" : "deny"} ${runId}: ${(error as Error).message}`),
      );
    }
  }

  async prune(options: PruneOptions): Promise<number> {
    const { olderThanMs, status } = assertPruneOptions(options);
    this.#assertOpen();
    if (this.#mode === "client") {
      return askToPrune(
        this.#queueDir,
        { olderThanMs, status: [...status] },
        {
          assertOpen: () => this.#assertOpen(),
          pruneHere: (lock) => {
            this.#scan();
            return pruneRuns(this.#queueDir, this.#runs, { olderThanMs, status: [...status] }, lock);
          },
        },
      );
    }
    this.#assertHolder();
    this.#scan();
    // Requests made before this prune go first: a retry asked for still happens.
    this.#takeCancelRequests();
    this.#takeRetryRequests();
    return pruneRuns(
      this.#queueDir,
      this.#runs,
      { olderThanMs, status: [...status] },
      this.#lock as DirectoryLock,
    );
  }

  /** A worker carries out prune requests clients left as files, and answers each beside it. */
  #takePruneRequests(): void {
    this.#assertHolder();
    const lock = this.#lock as DirectoryLock;
    answerPruneRequests(
      this.#queueDir,
      (request) => pruneRuns(this.#queueDir, this.#runs, request, lock),
      (name, reason) => this.#warnStray(`prune/${name}`, reason),
    );
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const controller of this.#controllers.values())
      controller.abort(new RunQueueClosedError("it closed while this run was leased"));
    this.#waiters.notifyAll();
    await this.#lock?.release();
  }

  /** Wait until something changes for `runId` (or anything, for workers waiting for work). */
  waitForWork(signal?: AbortSignal): Promise<void> {
    return this.#waiters.next("enqueued", { signal: signal });
  }

  /** Write a run's file durably, in a worker only while it still holds the directory. */
  #write(run: StoredRun): void {
    this.#assertHolder(run.runId);
    // Each write carries the epoch it was fenced on: the file says which holder wrote it last.
    const stored: StoredRun = this.#lock ? { ...run, epoch: this.#lock.epoch } : run;
    try {
      writeFileDurably(join(this.#dir, `${run.runId}.json`), JSON.stringify(stored));
    } catch (error) {
      this.#pausedUntil = Date.now() + 1_000;
      throw error;
    }
    this.#runs.set(run.runId, stored);
    this.#waiters.notify(run.runId);
  }

  #assertOpen(): void {
    if (this.#closed) throw new RunQueueClosedError();
  }
}

/** A decision a client left in `decide/` for the worker. */
const decideRequestSchema = z.strictObject({
  runId: RunIdSchema,
  approved: z.boolean(),
  callId: z.string().optional(),
  reason: z.string().optional(),
});

function publicRecord(run: StoredRun): RunRecord {
  const { lease: _lease, epoch: _epoch, ...record } = run;
  return record;
}
