/**
 * The embedded run queue: no server, one process. Each run is a JSON file in `dir/runs/`,
 * replaced atomically (temp file + rename) on every change, so a `kill -9` leaves every run as its
 * last completed write. A lock file keeps a second process off the same directory; on open, runs
 * a dead process left active go back to waiting and resume from their last checkpoint.
 */
import { randomUUID } from "node:crypto";
import {
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import lockfile from "proper-lockfile";
import {
  assertPriority,
  assertPruneOptions,
  assertRunId,
  type EnqueueOptions,
  type FinishedStatus,
  isPrunable,
  LeaseLostError,
  type PruneOptions,
  type RunJob,
  type RunLease,
  type RunQueue,
  type RunRecord,
  type RunStatus,
  type StoredCheckpoint,
} from "./run-queue.ts";
import { Waiters } from "./waiters.ts";

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
   * it adds runs as new files, reads them from disk, and asks the worker to cancel, retry or prune
   * through a request file; it cannot take runs.
   */
  mode?: "worker" | "client";
}

/** What the queue keeps beside a run's public record: who holds it. */
interface StoredRun extends RunRecord {
  /** The holder's lease token while active. */
  lease?: string;
}

/**
 * Open (or create) an embedded queue in `dir`. Throws when another live process holds it.
 * @example
 * const queue = await createEmbeddedQueue({ dir: ".forge/runs" });
 * await queue.enqueue("weather", "Weather in Paris?", { runId: "order-17" });
 */
export async function createEmbeddedQueue(options: EmbeddedQueueOptions): Promise<RunQueue> {
  const runsDir = join(options.dir, "runs");
  mkdirSync(runsDir, { recursive: true });
  mkdirSync(join(options.dir, "cancel"), { recursive: true });
  mkdirSync(join(options.dir, "retry"), { recursive: true });
  mkdirSync(join(options.dir, "prune"), { recursive: true });
  if (options.mode === "client") {
    const queue = new EmbeddedQueue(runsDir, async () => {}, "client");
    queue.recover();
    return queue;
  }
  let unlock: () => Promise<void>;
  try {
    const retries = Math.ceil((options.waitForLockMs ?? 0) / 500);
    unlock = await lockfile.lock(options.dir, {
      ...lockOptions(options.dir),
      retries: { retries, minTimeout: 500, maxTimeout: 500, factor: 1 },
    });
  } catch (error) {
    throw new Error(
      `The run queue in ${options.dir} is open in another process (${(error as Error).message}). Stop that process, or give this one another directory.`,
      { cause: error },
    );
  }
  const queue = new EmbeddedQueue(runsDir, unlock, "worker");
  queue.recover();
  return queue;
}

/** The directory lock a worker holds (and a client pruning while no worker does). */
function lockOptions(dir: string): { lockfilePath: string; stale: number } {
  return { lockfilePath: join(dir, "queue.lock"), stale: 10_000 };
}

/** A client's prune request, as a file in `prune/`, and the worker's answer beside it. */
interface PruneRequest {
  olderThanMs: number;
  status: FinishedStatus[];
}
type PruneAnswer = { removed: number } | { error: string };

class EmbeddedQueue implements RunQueue {
  readonly #dir: string;
  readonly #unlock: () => Promise<void>;
  readonly #runs = new Map<string, StoredRun>();
  readonly #controllers = new Map<string, AbortController>();
  readonly #waiters = new Waiters();
  readonly #mode: "worker" | "client";
  #seq = 0;
  #seqMs = 0;
  #closed = false;

  constructor(dir: string, unlock: () => Promise<void>, mode: "worker" | "client") {
    this.#dir = dir;
    this.#unlock = unlock;
    this.#mode = mode;
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
   * Read run files this process has not seen (clients add runs as files); a client rereads all,
   * and forgets the runs whose files are gone (pruned).
   */
  #scan(): void {
    const seen = new Set<string>();
    for (const name of readdirSync(this.#dir)) {
      if (!name.endsWith(".json")) continue;
      const runId = name.slice(0, -".json".length);
      if (this.#mode === "worker" && this.#runs.has(runId)) continue;
      try {
        this.#runs.set(runId, JSON.parse(readFileSync(join(this.#dir, name), "utf8")) as StoredRun);
        seen.add(runId);
      } catch (error) {
        // A file being replaced (rename is atomic, so only a client racing a delete sees this).
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      }
    }
    if (this.#mode === "client") {
      for (const runId of [...this.#runs.keys()]) if (!seen.has(runId)) this.#runs.delete(runId);
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
    try {
      const run = JSON.parse(readFileSync(join(this.#dir, `${runId}.json`), "utf8")) as StoredRun;
      this.#runs.set(runId, run);
      return run;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      this.#runs.delete(runId);
      return undefined;
    }
  }

  /** A worker honours cancel requests clients left as files. */
  #takeCancelRequests(): void {
    const dir = join(this.#dir, "..", "cancel");
    for (const runId of readdirSync(dir)) {
      rmSync(join(dir, runId), { force: true });
      void this.cancel(runId);
    }
  }

  /** A worker honours retry requests clients left as files (a run no longer retryable is left as it is). */
  #takeRetryRequests(): void {
    const dir = join(this.#dir, "..", "retry");
    for (const runId of readdirSync(dir)) {
      rmSync(join(dir, runId), { force: true });
      this.retry(runId).catch(() => {});
    }
  }

  async enqueue(workflow: string, message: string, options: EnqueueOptions = {}): Promise<RunRecord> {
    this.#assertOpen();
    const runId = assertRunId(options.runId ?? randomUUID());
    const priority = assertPriority(options.priority ?? 0);
    // Runs a client added are files this process may not have read yet (idempotent enqueue).
    const existing = this.#refresh(runId);
    if (existing) return publicRecord(existing);
    const run: StoredRun = {
      runId,
      workflow,
      message,
      priority,
      ...(options.promptVars && { promptVars: options.promptVars }),
      status: "waiting",
      attempts: 0,
      enqueuedAt: this.#enqueueTime(),
    };
    if (this.#mode === "client") {
      // Written whole to a file of its own, then linked to its name: an atomic exclusive create, so
      // a worker never reads half a run, and of two clients enqueueing one id only one wins.
      const temporary = join(this.#dir, `.${runId}.${randomUUID()}.tmp`);
      writeFileSync(temporary, JSON.stringify(run));
      try {
        linkSync(temporary, join(this.#dir, `${runId}.json`));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
        return publicRecord(this.#refresh(runId) ?? run);
      } finally {
        rmSync(temporary, { force: true });
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
    if (this.#mode === "client") throw new Error("A client-mode queue cannot take runs; open it as a worker");
    this.#scan();
    this.#takeCancelRequests();
    this.#takeRetryRequests();
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
    return this.#leaseOf(run, token, controller);
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
      writeFileSync(join(this.#dir, "..", "cancel", runId), "");
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
      writeFileSync(join(this.#dir, "..", "retry", runId), "");
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

  async prune(options: PruneOptions): Promise<number> {
    const { olderThanMs, status } = assertPruneOptions(options);
    this.#assertOpen();
    if (this.#mode === "client") return this.#askToPrune({ olderThanMs, status: [...status] });
    this.#scan();
    // Requests made before this prune go first: a retry asked for still happens.
    this.#takeCancelRequests();
    this.#takeRetryRequests();
    return this.#prune({ olderThanMs, status: [...status] });
  }

  /**
   * Delete the run files `request` names, in a process that holds the directory. A delete is one
   * unlink: a reader racing it finds the whole file or none (ENOENT, which every read here expects).
   */
  #prune(request: PruneRequest): number {
    if (this.#mode === "client") this.#scan();
    const status = new Set(request.status);
    const cutoff = Date.now() - request.olderThanMs;
    let removed = 0;
    for (const run of [...this.#runs.values()]) {
      if (!isPrunable(run, status, cutoff)) continue;
      // A retry asked for and not yet carried out wins: the run is about to wait again.
      if (existsSync(join(this.#dir, "..", "retry", run.runId))) continue;
      rmSync(join(this.#dir, `${run.runId}.json`), { force: true });
      // A cancel left for the pruned (finished) run must not reach a new run of the same id.
      rmSync(join(this.#dir, "..", "cancel", run.runId), { force: true });
      this.#runs.delete(run.runId);
      removed += 1;
    }
    return removed;
  }

  /** A worker carries out prune requests clients left as files, and answers each beside it. */
  #takePruneRequests(): void {
    const dir = join(this.#dir, "..", "prune");
    for (const name of readdirSync(dir)) {
      if (!name.endsWith(".json") || name.startsWith(".")) continue;
      const id = name.slice(0, -".json".length);
      let answer: PruneAnswer;
      try {
        answer = { removed: this.#prune(JSON.parse(readFileSync(join(dir, name), "utf8")) as PruneRequest) };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
        answer = { error: (error as Error).message };
      }
      writeAtomically(join(dir, `${id}.done`), JSON.stringify(answer));
      rmSync(join(dir, name), { force: true });
    }
  }

  /**
   * A client's prune: leave a request for the worker that holds the directory and wait for its
   * answer (at its next take or checkpoint); when no worker holds it, take the lock and prune here.
   */
  async #askToPrune(request: PruneRequest): Promise<number> {
    const queueDir = join(this.#dir, "..");
    const pruneDir = join(queueDir, "prune");
    const id = randomUUID();
    const requestPath = join(pruneDir, `${id}.json`);
    const answerPath = join(pruneDir, `${id}.done`);
    writeAtomically(requestPath, JSON.stringify(request));
    try {
      for (;;) {
        this.#assertOpen();
        if (existsSync(answerPath)) {
          const answer = JSON.parse(readFileSync(answerPath, "utf8")) as PruneAnswer;
          rmSync(answerPath, { force: true });
          if ("error" in answer) throw new Error(`The worker could not prune: ${answer.error}`);
          return answer.removed;
        }
        if (!(await lockfile.check(queueDir, lockOptions(queueDir)))) {
          const removed = await this.#pruneHoldingLock(queueDir, requestPath, request);
          if (removed !== undefined) return removed;
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      // Given up (the queue closed): a request nobody waits for any more is withdrawn, and an
      // answer that came meanwhile is not left behind.
      rmSync(requestPath, { force: true });
      rmSync(answerPath, { force: true });
    }
  }

  /** Prune under the directory's lock when it is free and the request still unclaimed; else undefined. */
  async #pruneHoldingLock(
    queueDir: string,
    requestPath: string,
    request: PruneRequest,
  ): Promise<number | undefined> {
    let unlock: () => Promise<void>;
    try {
      unlock = await lockfile.lock(queueDir, lockOptions(queueDir));
    } catch {
      return undefined; // a worker took the directory meanwhile: it answers
    }
    try {
      // Claimed by taking it away: a worker that read it first has answered or will.
      const claimed = `${requestPath}.mine`;
      try {
        renameSync(requestPath, claimed);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw error;
      }
      rmSync(claimed, { force: true });
      return this.#prune(request);
    } finally {
      await unlock();
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const controller of this.#controllers.values()) controller.abort(new Error("The run queue closed"));
    this.#waiters.notifyAll();
    await this.#unlock();
  }

  /** Wait until something changes for `runId` (or anything, for workers waiting for work). */
  waitForWork(signal?: AbortSignal): Promise<void> {
    return this.#waiters.next("enqueued", { signal: signal });
  }

  #leaseOf(run: StoredRun, token: string, controller: AbortController): RunLease {
    const { runId } = run;
    // Fenced: only the lease's holder may write, and only while the run is active under it.
    const owned = (): StoredRun => {
      const current = this.#runs.get(runId);
      if (this.#closed) throw new LeaseLostError(runId, "the queue closed");
      if (current?.lease !== token || current.status !== "active") {
        throw new LeaseLostError(runId, current ? `the run is ${current.status}` : "the run is gone");
      }
      return current;
    };
    const finish = (update: Partial<StoredRun>) => {
      const { lease: _lease, ...rest } = owned();
      this.#write({ ...rest, ...update, finishedAt: Date.now() });
      this.#controllers.delete(runId);
    };
    const job: RunJob = {
      runId,
      workflow: run.workflow,
      message: run.message,
      priority: run.priority,
      ...(run.promptVars && { promptVars: run.promptVars }),
    };
    return {
      job,
      checkpoint: run.checkpoint,
      attempts: run.attempts,
      signal: controller.signal,
      saveCheckpoint: async (checkpoint: StoredCheckpoint) => {
        this.#takeCancelRequests(); // a client's cancel reaches an active run at its next checkpoint
        this.#takePruneRequests(); // and a client waiting on a prune hears back while runs are long
        this.#write({ ...owned(), checkpoint });
      },
      complete: async (result: unknown) => finish({ status: "completed", result: result ?? null }),
      fail: async (error, { retry } = { retry: false }) => {
        if (retry) {
          const { lease: _lease, ...rest } = owned();
          this.#write({ ...rest, status: "waiting", error });
          this.#controllers.delete(runId);
          this.#waiters.notify("enqueued");
          return;
        }
        finish({ status: "failed", error });
      },
      release: async () => {
        const { lease: _lease, ...rest } = owned();
        this.#write({ ...rest, status: "waiting" });
        this.#controllers.delete(runId);
        this.#waiters.notify("enqueued");
      },
    };
  }

  #write(run: StoredRun): void {
    const path = join(this.#dir, `${run.runId}.json`);
    writeFileSync(`${path}.tmp`, JSON.stringify(run));
    renameSync(`${path}.tmp`, path);
    this.#runs.set(run.runId, run);
    this.#waiters.notify(run.runId);
  }

  #assertOpen(): void {
    if (this.#closed) throw new Error("The run queue is closed");
  }
}

/** Write a file whole: a reader sees the old one, none, or the new one, never a part. */
function writeAtomically(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

function publicRecord(run: StoredRun): RunRecord {
  const { lease: _lease, ...record } = run;
  return record;
}
