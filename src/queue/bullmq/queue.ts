/**
 * The BullMQ run queue: runs are BullMQ jobs on Redis (job id = run id), taken by manual
 * processing (`Worker.getNextJob`) so that a lease is the job's lock token. The lease renews the
 * lock every `lockMs / 2`; a worker that dies stops renewing and BullMQ's stall checker moves its
 * job back to waiting, where the next taker resumes it from the checkpoint kept in the job's data.
 * BullMQ does not fence writes (a worker paused past its lock keeps running), so every checkpoint
 * write is a compare-and-set on the job's lock token in the store under BullMQ (`JobStore`: a Lua
 * script on Redis, one SQL statement on PostgreSQL): only the lock's holder may write.
 */
import { randomUUID } from "node:crypto";
// Types only: bullmq and ioredis are optional peers, loaded by createBullmqQueue (loadBullmq).
import type { Job, Queue, QueueEvents, Worker } from "bullmq";
import type { Redis } from "ioredis";
import { isFullyDecided } from "../../core/approval.ts";
import { ForgeError } from "../../core/errors.ts";
import { importPeers, type OptionalPeer, OptionalPeerMissingError } from "../../core/optional-peer.ts";
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
  type FinishedStatus,
  isPrunable,
  PRIORITY_LIMIT,
  type PruneOptions,
  type RunLease,
  type RunQueue,
  RunQueueClosedError,
  type RunRecord,
  type RunStatus,
  urlWithoutPassword,
} from "../run-queue.ts";
import { Waiters } from "../waiters.ts";
import type { JobData, JobStore } from "./job-store.ts";
import { LiveLease } from "./lease.ts";
import { defineFencedCommands, RedisJobStore } from "./redis-store.ts";

/** Options of `createBullmqQueue`. */
export interface BullmqQueueOptions extends BullmqEngineOptions {
  /** Where Redis listens: `{ host, port }` or `{ url: "redis://…" }`. */
  connection: { host: string; port: number } | { url: string };
  /** BullMQ's key prefix (default "bull"). */
  prefix?: string;
}

/** What the BullMQ engine takes on every store (Redis, PostgreSQL). */
export interface BullmqEngineOptions {
  /** The BullMQ queue's name (default "forge-runs"). Producers and workers must agree. */
  name?: string;
  /**
   * How long a lease's lock lives without renewal; renewed every `lockMs / 2` (default 5 000: with
   * the stall check below, a dead worker's run resumes elsewhere within about 10 s).
   */
  lockMs?: number;
  /** How often workers look for runs whose worker died (default 2 000). */
  stalledIntervalMs?: number;
  /** Times a run may lose its worker before it fails for good (default 3; BullMQ's is 1). */
  maxStalledCount?: number;
  /** How long to wait for the store on open (default 5 000). */
  connectTimeoutMs?: number;
  /** Hears connection errors while the queue reconnects (operations under way reject on their own). */
  onError?: (error: Error) => void;
  /**
   * Hears what the queue set aside rather than failing on: a job whose data is not a run (null,
   * or missing its run fields; written by something other than forge), skipped by `list`, `get`
   * and `prune` and failed by `take`. Default: one line on stderr.
   */
  onWarning?: (message: string) => void;
  /**
   * Largest serialized input of a run (the JSON of workflow, message and promptVars) that
   * `enqueue` accepts, in bytes (default 1 MiB, `DEFAULT_MAX_PAYLOAD_BYTES`; `Infinity`: none).
   * Larger runs are refused with `RunPayloadTooLargeError` before anything reaches the store.
   */
  maxPayloadBytes?: number;
}

type RedisAddress = { url: string } | { host: string; port: number };

/** The queue's store (Redis, PostgreSQL) could not be reached when the queue opened. */
export class RunQueueConnectionError extends ForgeError {
  constructor(address: string, detail: string, store: "Redis" | "PostgreSQL" = "Redis") {
    super(
      store === "Redis"
        ? `Cannot reach Redis at ${address} (${detail}). Start redis-server there, or pass the right connection ({ host, port } or { url }).`
        : `Cannot reach PostgreSQL at ${address} (${detail}). Start PostgreSQL there, or pass the right connection ({ url } or { host, port, user, password, database }).`,
    );
  }
}

/** This process's enqueues within one millisecond, in order (the fraction of `enqueuedAt`). */
let enqueueSeq = 0;
let enqueueSeqMs = 0;

function enqueueTime(): number {
  const now = Date.now();
  enqueueSeq = now === enqueueSeqMs ? enqueueSeq + 1 : 0;
  enqueueSeqMs = now;
  return now + Math.min(enqueueSeq, 999) / 1000;
}

/** BullMQ runs lower numbers first and priority 0 before every prioritised job: map to 1…2^21. */
const PRIORITY_BASE = PRIORITY_LIMIT;

/** The BullMQ classes an engine opens, bound to its store (Redis by default, or `withBackend(…)`). */
export interface BullmqClasses {
  Queue: new (name: string, options: object) => Queue<JobData>;
  Worker: new (name: string, processor: null, options: object) => Worker<JobData>;
  QueueEvents: new (name: string, options: object) => QueueEvents;
}

/**
 * Open a run queue on Redis through BullMQ. Producers and workers open it with the same `name`.
 * @example
 * const queue = await createBullmqQueue({ connection: { url: "redis://127.0.0.1:6379" } });
 * await queue.enqueue("weather", "Weather in Paris?", { runId: "order-17", priority: 5 });
 * const worker = startWorker({ queue, registry });
 */
export async function createBullmqQueue(options: BullmqQueueOptions): Promise<BullmqRunQueue> {
  const modules = await loadBullmq();
  const { Redis } = modules.ioredis;
  const connection: RedisAddress =
    "url" in options.connection
      ? { url: options.connection.url }
      : { host: options.connection.host, port: options.connection.port };
  const address =
    "url" in connection ? urlWithoutPassword(connection.url) : `${connection.host}:${connection.port}`;
  const redis = defineFencedCommands(
    "url" in connection
      ? new Redis(connection.url, { maxRetriesPerRequest: null, lazyConnect: true })
      : new Redis({ ...connection, maxRetriesPerRequest: null, lazyConnect: true }),
  );
  redis.on("error", (error: Error) => options.onError?.(error));
  const timeoutMs = options.connectTimeoutMs ?? 5_000;
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      redis.connect().then(() => redis.ping()),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } catch (error) {
    redis.disconnect();
    throw new RunQueueConnectionError(address, (error as Error).message);
  } finally {
    clearTimeout(timer);
  }
  const prefix = options.prefix ?? "bull";
  const name = options.name ?? "forge-runs";
  const { Queue, Worker, QueueEvents } = modules.bullmq;
  return new BullmqRunQueue({
    store: new RedisJobStore(redis, address, prefix, name),
    classes: { Queue, Worker, QueueEvents } as unknown as BullmqClasses,
    connection: { connection, prefix },
    options: { ...options, name },
  });
}

/** bullmq and ioredis, the optional peers the BullMQ engine needs. */
interface BullmqModules {
  bullmq: typeof import("bullmq");
  ioredis: { Redis: typeof Redis };
}

/** bullmq and ioredis, the BullMQ engine's optional peers. */
const BULLMQ: OptionalPeer = { name: "bullmq", major: 6 };
const IOREDIS: OptionalPeer = { name: "ioredis", major: 5 };
const BULLMQ_PEERS: readonly OptionalPeer[] = [BULLMQ, IOREDIS];

/** The BullMQ engine's optional peers are not installed. */
export class BullmqMissingError extends OptionalPeerMissingError {
  constructor(options?: ErrorOptions, missing: readonly string[] = ["bullmq", "ioredis"]) {
    super(BULLMQ_PEERS, missing, "the BullMQ run queue needs bullmq and ioredis", {
      ...options,
      note: "the embedded queue, createEmbeddedQueue, needs neither",
    });
  }
}

async function loadBullmq(): Promise<BullmqModules> {
  const [bullmq, { Redis }] = await importPeers(
    [
      { ...BULLMQ, load: () => import("bullmq") },
      { ...IOREDIS, load: () => import("ioredis") },
    ],
    (missing, cause) => new BullmqMissingError({ cause }, missing),
  );
  return { bullmq, ioredis: { Redis } };
}

/** The BullMQ engine's queue: a `RunQueue`, plus `waitForWork` for workers. */
export class BullmqRunQueue implements RunQueue {
  readonly #store: JobStore;
  readonly #classes: BullmqClasses;
  /** What every BullMQ class of this queue is opened with: its connection (and Redis's prefix). */
  readonly #connection: object;
  readonly #name: string;
  readonly #lockMs: number;
  readonly #stalledIntervalMs: number;
  readonly #maxStalledCount: number;
  readonly #onError: (error: Error) => void;
  readonly #warn: (message: string) => void;
  readonly #maxPayloadBytes: number;
  /** Malformed jobs already warned about (warned once, not at every list). */
  readonly #malformedSeen = new Set<string>();
  readonly #queue: Queue<JobData>;
  readonly #leases = new Map<string, LiveLease>();
  readonly #waiters = new Waiters();
  #worker: Promise<Worker<JobData>> | undefined;
  #events: Promise<QueueEvents> | undefined;
  #closed = false;

  /** @internal Use `createBullmqQueue` (Redis) or `createPostgresQueue`. */
  constructor(input: {
    store: JobStore;
    classes: BullmqClasses;
    connection: object;
    options: BullmqEngineOptions & { name: string };
  }) {
    const { options } = input;
    this.#store = input.store;
    this.#classes = input.classes;
    this.#connection = input.connection;
    this.#name = options.name;
    this.#lockMs = options.lockMs ?? 5_000;
    this.#stalledIntervalMs = options.stalledIntervalMs ?? 2_000;
    this.#maxStalledCount = options.maxStalledCount ?? 3;
    this.#onError = options.onError ?? (() => {});
    this.#maxPayloadBytes = assertMaxPayloadBytes(options.maxPayloadBytes);
    this.#warn =
      options.onWarning ?? ((message: string) => console.warn(`forge queue ${options.name}: ${message}`));
    this.#queue = new this.#classes.Queue(this.#name, this.#connection);
    this.#queue.on("error", this.#onError);
  }

  /** Resolves once BullMQ's queue is open on its store (on PostgreSQL: its schema is in place). */
  async waitUntilReady(): Promise<void> {
    await this.#queue.waitUntilReady();
  }

  /** A key of this queue as BullMQ lays it out on Redis: `<prefix>:<name>:<suffix>` (PostgreSQL: `<name>:<suffix>`). */
  key(suffix: string): string {
    return this.#store instanceof RedisJobStore ? this.#store.key(suffix) : `${this.#name}:${suffix}`;
  }

  async enqueue(workflow: string, message: string, options: EnqueueOptions = {}): Promise<RunRecord> {
    this.#assertOpen();
    const runId = assertNewRunId(options.runId ?? randomUUID());
    const priority = assertPriority(options.priority ?? 0);
    if (options.traceparent !== undefined) assertTraceparent(options.traceparent);
    assertPayloadSize(runId, { workflow, message, promptVars: options.promptVars }, this.#maxPayloadBytes);
    const data: JobData = {
      runId,
      workflow,
      message,
      priority,
      enqueuedAt: enqueueTime(),
      ...(options.promptVars && { promptVars: options.promptVars }),
      ...(options.traceparent && { traceparent: options.traceparent }),
    };
    // An existing job id makes `add` a no-op that returns the existing job.
    await this.#queue.add(workflow, data, { jobId: runId, priority: PRIORITY_BASE - priority });
    const record = await this.get(runId);
    if (!record) throw new Error(`Run ${runId} vanished right after it was enqueued`);
    return record;
  }

  async take(workerId: string): Promise<RunLease | null> {
    this.#assertOpen();
    const worker = await this.#startWorker();
    await this.#restorePriorities();
    let emptyAnswers = 0;
    for (;;) {
      const token = `${workerId}:${randomUUID()}`;
      const job = await worker.getNextJob(token, { block: false });
      if (!job?.id) {
        // A non-blocking fetch can come back empty while runs wait (BullMQ's wait marker lags a
        // moment behind under load): ask again while the counts say some wait.
        const counts = await this.#queue.getJobCounts("waiting", "prioritized");
        if ((counts.waiting ?? 0) + (counts.prioritized ?? 0) === 0 || ++emptyAnswers > 3) return null;
        await new Promise((resolve) => setTimeout(resolve, 10 * emptyAnswers));
        continue;
      }
      const malformed = malformationOf(job);
      if (malformed) {
        // Not a run: nothing could run it. Failed (kept for inspection), and the next one taken.
        this.#warnMalformed(job.id, malformed, "failed it");
        await job.moveToFailed(new Error(`Job ${job.id} is not a run: ${malformed}`), token, false);
        continue;
      }
      const [cancelled] = await this.#store.cancelled([job]);
      if (cancelled) {
        // Cancelled while it waited: settle it as failed and look further.
        await job.moveToFailed(new Error(`Run ${job.id} was cancelled`), token, false);
        continue;
      }
      if (job.deferredFailure) {
        // BullMQ's stall checker marks a run that stalled too often; its processor fails it on take.
        await job.moveToFailed(new Error(job.deferredFailure), token, false);
        continue;
      }
      return this.#leaseOf(job, token);
    }
  }

  async get(runId: string): Promise<RunRecord | undefined> {
    assertRunId(runId);
    // The state first: a job read after it is at least as new (a completed state with its result).
    const state = await this.#queue.getJobState(runId);
    if (state === "unknown") return undefined;
    const job = await this.#queue.getJob(runId);
    if (!job) return undefined;
    const malformed = malformationOf(job);
    if (malformed) {
      this.#warnMalformed(runId, malformed, "skipped it");
      return undefined;
    }
    const [cancelled = false] = await this.#store.cancelled([job]);
    const [cancelledAt] = cancelled && !job.finishedOn ? await this.#store.cancelTimes([job]) : [];
    return recordOf(job, state, cancelled, cancelledAt);
  }

  async list(filter: { status?: RunStatus } = {}): Promise<RunRecord[]> {
    const states = ["active", "waiting", "prioritized", "delayed", "completed", "failed"] as const;
    const found = new Map<string, { job: Job<JobData>; state: string }>();
    for (const state of states) {
      for (const job of await this.#queue.getJobs([state], 0, -1, true)) {
        if (!job?.id || found.has(job.id)) continue;
        // One job that is not a run must not hide the others: skipped and reported.
        const malformed = malformationOf(job);
        if (malformed) this.#warnMalformed(job.id, malformed, "skipped it");
        else found.set(job.id, { job, state });
      }
    }
    const entries = [...found.values()];
    const jobs = entries.map(({ job }) => job);
    const cancelled = await this.#store.cancelled(jobs);
    const cancelTimes = cancelled.includes(true) ? await this.#store.cancelTimes(jobs) : [];
    return entries
      .map(({ job, state }, index) => recordOf(job, state, cancelled[index] === true, cancelTimes[index]))
      .filter((record) => filter.status === undefined || record.status === filter.status)
      .sort((a, b) => a.enqueuedAt - b.enqueuedAt);
  }

  async result(runId: string, options: { signal?: AbortSignal } = {}): Promise<unknown> {
    this.#assertOpen();
    assertRunId(runId);
    await this.#listenForFinished();
    for (;;) {
      // Woken by close: the store's connections are going, a read could wait for them forever.
      this.#assertOpen();
      const run = await this.get(runId);
      if (!run) throw new RangeError(`No run ${runId} in this queue`);
      if (run.status === "completed") return run.result;
      if (run.status === "failed" || run.status === "cancelled") {
        const error = new Error(run.error?.message ?? `Run ${runId} was ${run.status}`);
        error.name = run.error?.name ?? "Error";
        throw error;
      }
      options.signal?.throwIfAborted();
      // A finished event wakes this at once; the timer covers events missed while reconnecting.
      await this.#waiters.next(runId, { timeoutMs: 1_000, signal: options.signal });
    }
  }

  async cancel(runId: string): Promise<void> {
    assertRunId(runId);
    if ((await this.#store.cancel(runId)) !== "marked") return;
    // A lease held in this process stops now; one held elsewhere at its next write or renewal.
    await this.#leases.get(runId)?.cancelled();
    this.#waiters.notify(runId);
  }

  async approve(runId: string, options: DecideOptions = {}): Promise<RunRecord> {
    return this.#decide(runId, true, options);
  }

  async deny(runId: string, options: DecideOptions = {}): Promise<RunRecord> {
    return this.#decide(runId, false, options);
  }

  /**
   * Keep a person's decision in the parked job's data; the last pending call decided promotes the
   * job from BullMQ's delayed set to waiting. A run left delayed with every call decided (a
   * producer stopped between the two steps) is promoted by the next decision asked for it.
   */
  async #decide(runId: string, approved: boolean, options: DecideOptions): Promise<RunRecord> {
    assertRunId(runId);
    this.#assertOpen();
    const job = await this.#queue.getJob(runId);
    const run = await this.get(runId);
    if (!job || !run) throw new RangeError(`No run ${runId} in this queue`);
    const stranded = run.approval && isFullyDecided(run.approval) && (await job.getState()) === "delayed";
    if (!stranded) {
      const approval = decideQueuedRun(run, approved, options);
      await job.updateData({ ...job.data, approval });
      if (!isFullyDecided(approval)) return this.#recordOrThrow(runId);
    }
    await job.promote();
    await this.#toFrontOfPriority(job);
    this.#waiters.notify("work");
    this.#waiters.notify(runId);
    return this.#recordOrThrow(runId);
  }

  async #recordOrThrow(runId: string): Promise<RunRecord> {
    const record = await this.get(runId);
    if (!record) throw new Error(`Run ${runId} vanished while it was decided`);
    return record;
  }

  async retry(runId: string): Promise<RunRecord> {
    this.#assertOpen();
    const run = await this.get(runId);
    if (!run) throw new RangeError(`No run ${runId} in this queue`);
    const state = await this.#queue.getJobState(runId);
    const job = await this.#queue.getJob(runId);
    if (!job) throw new RangeError(`No run ${runId} in this queue`);
    if (state === "failed") {
      // The mark goes first: a taker refuses a cancelled run.
      await this.#store.clearForRetry(runId);
      // A fresh allowance of backend retries: the run failed because they ran out.
      await job.retry("failed", { resetAttemptsMade: true, resetAttemptsStarted: true });
      await this.#toFrontOfPriority(job);
    } else if (run.status === "cancelled" && state !== "active") {
      // Cancelled while it waited, not yet settled by a taker: it simply waits again.
      await this.#store.clearForRetry(runId);
    } else {
      throw new RangeError(
        run.status === "cancelled"
          ? `Run ${runId} is still stopping after its cancel; retry it once \`runs show\` says cancelled and it is no longer active`
          : `Run ${runId} is ${run.status}: only a failed or cancelled run can be retried`,
      );
    }
    this.#waiters.notify("work");
    const record = await this.get(runId);
    if (!record) throw new Error(`Run ${runId} vanished while it was retried`);
    return record;
  }

  /**
   * Remove finished runs (see `RunQueue.prune`). BullMQ's failed set holds both failed and
   * cancelled runs (a cancelled one carries the cancel mark), and a run cancelled while it waited
   * stays waiting, marked, until a taker settles it. So: completed runs, and the failed set when
   * both failed and cancelled are asked for, go with BullMQ's `clean` (one atomic step per batch on
   * either store, aged by `finishedOn`); otherwise each matching job is read again (a `retry`
   * under way moves it out of the set or takes its mark) and removed by id. BullMQ's `remove`
   * refuses a locked job, so a run a worker just took stays.
   */
  async prune(options: PruneOptions): Promise<number> {
    const { olderThanMs, status } = assertPruneOptions(options);
    this.#assertOpen();
    const cutoff = Date.now() - olderThanMs;
    let removed = 0;
    if (status.has("completed")) removed += (await this.#queue.clean(olderThanMs, 0, "completed")).length;
    if (status.has("failed") && status.has("cancelled")) {
      removed += (await this.#queue.clean(olderThanMs, 0, "failed")).length;
    } else if (status.has("failed") || status.has("cancelled")) {
      removed += await this.#removeEach("failed", status, cutoff);
    }
    if (status.has("cancelled")) {
      for (const state of ["waiting", "prioritized", "delayed"] as const) {
        removed += await this.#removeEach(state, status, cutoff);
      }
    }
    return removed;
  }

  /** Remove, one by one, the jobs in `state` that `prune` takes, a page at a time. */
  async #removeEach(
    state: "failed" | "waiting" | "prioritized" | "delayed",
    status: ReadonlySet<FinishedStatus>,
    cutoff: number,
  ): Promise<number> {
    const pageSize = 500;
    let removed = 0;
    for (let start = 0; ; ) {
      const jobs = (await this.#queue.getJobs([state], start, start + pageSize - 1, true)).filter(
        (job): job is Job<JobData> => Boolean(job?.id),
      );
      if (jobs.length === 0) return removed;
      const listed = await this.#prunable(jobs, state, status, cutoff);
      let kept = 0;
      for (const [index, job] of jobs.entries()) {
        const id = job.id as string;
        const prunable =
          listed[index] === true &&
          (await this.#stillPrunable(id, state, status, cutoff)) &&
          (await this.#queue.remove(id, { removeChildren: false })) === 1;
        if (prunable) removed += 1;
        else kept += 1;
      }
      // Removed jobs leave the set: the next page starts after the ones kept.
      start += kept;
    }
  }

  /** Whether `prune` takes each of `jobs`, read in `state`. */
  async #prunable(
    jobs: Job<JobData>[],
    state: string,
    status: ReadonlySet<FinishedStatus>,
    cutoff: number,
  ): Promise<boolean[]> {
    const cancelled = await this.#store.cancelled(jobs);
    // A run cancelled while it waited has no finishedOn: it is aged by its mark's time.
    const cancelTimes = state === "failed" ? [] : await this.#store.cancelTimes(jobs);
    return jobs.map((job, index) => {
      // A job that is not a run is left alone: prune removes runs only.
      if (malformationOf(job)) return false;
      return isPrunable(recordOf(job, state, cancelled[index] === true, cancelTimes[index]), status, cutoff);
    });
  }

  /** Read a listed job again, just before removing it: still in the set it was listed in, still prunable. */
  async #stillPrunable(
    runId: string,
    listed: string,
    status: ReadonlySet<FinishedStatus>,
    cutoff: number,
  ): Promise<boolean> {
    const state = await this.#queue.getJobState(runId);
    if (!stillIn(listed, state)) return false;
    const job = await this.#queue.getJob(runId);
    return job !== undefined && (await this.#prunable([job], state, status, cutoff))[0] === true;
  }

  /** Resolves when a run may be waiting (a run was added or moved back to waiting), or after 200 ms. */
  async waitForWork(signal?: AbortSignal): Promise<void> {
    this.#assertOpen();
    // An idle worker runs the stall check too: a dead worker's run waits again without a take.
    await this.#startWorker();
    await this.#listenForFinished();
    await this.#waiters.next("work", { timeoutMs: 200, signal: signal });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const lease of this.#leases.values())
      lease.abort(new RunQueueClosedError("it closed while this run was leased"));
    this.#leases.clear();
    this.#waiters.notifyAll();
    const worker = await this.#worker?.catch(() => undefined);
    const events = await this.#events?.catch(() => undefined);
    await Promise.allSettled([worker?.close(true), events?.close(), this.#queue.close()]);
    await this.#store.close();
  }

  #startWorker(): Promise<Worker<JobData>> {
    this.#worker ??= (async () => {
      const worker = new this.#classes.Worker(this.#name, null, {
        ...this.#connection,
        autorun: false,
        lockDuration: this.#lockMs,
        stalledInterval: this.#stalledIntervalMs,
        maxStalledCount: this.#maxStalledCount,
      });
      worker.on("error", this.#onError);
      await worker.waitUntilReady();
      // Manual processing does not start BullMQ's stall checker: every worker process runs it.
      await worker.startStalledCheckTimer();
      return worker;
    })();
    return this.#worker;
  }

  /**
   * A run that waits again keeps its place (`RunQueue.take`): ahead of the runs of its priority
   * enqueued after it. BullMQ adds a retried or promoted job behind them: moved to the front.
   */
  async #toFrontOfPriority(job: Job<JobData>): Promise<void> {
    await job.changePriority({ priority: job.priority, lifo: true });
  }

  /**
   * On Redis, BullMQ's stall check puts a dead worker's job on its plain wait list, which is taken
   * before every prioritised job whatever the job's priority (forge adds every run with one): a
   * recovered low-priority run jumped the high ones. Each goes back to the front of its priority
   * before a run is taken. (On PostgreSQL the stall check keeps the priority: nothing to do.)
   */
  async #restorePriorities(): Promise<void> {
    // One cheap count at each take; the jobs are read only when some wait there.
    if ((await this.#store.unprioritisedWaiting()) === 0) return;
    for (const job of await this.#queue.getJobs(["wait"], 0, -1, true)) {
      if (job?.priority) await this.#toFrontOfPriority(job);
    }
  }

  #listenForFinished(): Promise<QueueEvents> {
    this.#events ??= (async () => {
      const events = new this.#classes.QueueEvents(this.#name, this.#connection);
      events.on("error", this.#onError);
      events.on("completed", ({ jobId }) => this.#waiters.notify(jobId));
      events.on("failed", ({ jobId }) => this.#waiters.notify(jobId));
      events.on("waiting", () => this.#waiters.notify("work"));
      events.on("stalled", () => this.#waiters.notify("work"));
      await events.waitUntilReady();
      return events;
    })();
    return this.#events;
  }

  #leaseOf(job: Job<JobData>, token: string): RunLease {
    const runId = job.id as string;
    const lease = new LiveLease({
      job,
      token,
      store: this.#store,
      lockMs: this.#lockMs,
      onEnd: () => this.#leases.delete(runId),
    });
    this.#leases.set(runId, lease);
    return lease;
  }

  #assertOpen(): void {
    if (this.#closed) throw new RunQueueClosedError();
  }

  /** Report a job that is not a run, once per job and action. */
  #warnMalformed(jobId: string, malformed: string, action: string): void {
    const key = `${jobId}\u0000${action}`;
    if (this.#malformedSeen.has(key)) return;
    this.#malformedSeen.add(key);
    this.#warn(
      `job ${jobId} is not a run (${malformed}); ${action}. It was not written by forge's enqueue: remove it with BullMQ (queue.remove("${jobId}")).`,
    );
  }
}

/**
 * Why a job's data is not a run's (written by something other than `enqueue`, or overwritten):
 * not an object, or without a string run id, workflow or message, or a numeric priority.
 * Undefined for a run.
 */
export function malformationOf(job: Pick<Job, "data">): string | undefined {
  const data: unknown = job.data;
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    return `its data is ${data === null ? "null" : Array.isArray(data) ? "an array" : typeof data}`;
  }
  const fields = data as Record<string, unknown>;
  for (const key of ["runId", "workflow", "message"]) {
    if (typeof fields[key] !== "string") return `its data has no string ${key}`;
  }
  if (typeof fields.priority !== "number") return "its data has no numeric priority";
  return undefined;
}

/**
 * A job as a run's record. `cancelledAt`: when its cancel mark was set, the finish time of a run
 * cancelled while it waited or was parked (BullMQ gives it no `finishedOn`: no taker settled it).
 */
function recordOf(job: Job<JobData>, state: string, cancelled: boolean, cancelledAt?: number): RunRecord {
  // PostgreSQL keeps the cancel mark in the data (see postgres-store.ts): not part of the record.
  const {
    checkpoint,
    error,
    forgeCancelled: _cancelled,
    forgeCancelledAt: _cancelledAt,
    ...run
  } = job.data as JobData & {
    forgeCancelled?: unknown;
    forgeCancelledAt?: unknown;
  };
  const status: RunStatus =
    state === "completed"
      ? "completed"
      : cancelled
        ? "cancelled"
        : state === "failed"
          ? "failed"
          : state === "active"
            ? "active"
            : state === "delayed" && run.approval && !isFullyDecided(run.approval)
              ? "awaiting_approval"
              : "waiting";
  const failure =
    status === "cancelled"
      ? { name: "WorkflowCancelledError", message: `Run ${run.runId} was cancelled` }
      : status === "failed"
        ? (error ?? stalledError(job))
        : status === "waiting"
          ? error
          : undefined;
  return {
    ...run,
    status,
    attempts: job.attemptsStarted ?? 0,
    ...(checkpoint && { checkpoint }),
    ...(status === "completed" && { result: job.returnvalue ?? null }),
    ...(failure && { error: failure }),
    enqueuedAt: job.data.enqueuedAt ?? job.timestamp,
    ...(job.finishedOn
      ? { finishedAt: job.finishedOn }
      : status === "cancelled" && cancelledAt !== undefined && { finishedAt: cancelledAt }),
  };
}

/** Whether a job listed in `listed` is still there (waiting, prioritized and delayed all wait). */
function stillIn(listed: string, state: string): boolean {
  const waits = (name: string) => name === "waiting" || name === "prioritized" || name === "delayed";
  return state === listed || (waits(listed) && waits(state));
}

/** A failure BullMQ recorded itself: in practice, a run whose workers died too many times. */
function stalledError(job: Job<JobData>): { name: string; message: string } {
  return {
    name: "RunStalledError",
    message: `Run ${job.id} failed in BullMQ: ${job.failedReason} (its worker stopped renewing the lock more times than maxStalledCount allows)`,
  };
}
