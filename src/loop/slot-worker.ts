/**
 * SlotWorker: serializes workflow runs on one shared inference slot, with queuing by rank and
 * preemption. The queue lives in the `slotWorkerMachine` actor (JSON); the parts that cannot be
 * data (workflows, promises to settle) live here, keyed by job id.
 */
import { createActor, fromPromise } from "xstate";
import { ForgeError, WorkflowCancelledError } from "../core/errors.ts";
import { assertFiniteRank, resolveRank } from "../core/rank.ts";
import type { Workflow } from "../core/workflow.ts";
import {
  type RunJobInput,
  type SlotWorkerActor,
  type SlotWorkerSnapshot,
  slotWorkerMachine,
} from "../machines/slot-worker.machine.ts";
import type { RunOptions, WorkflowRunner } from "./runner.ts";

/** A SlotWorker was used outside its lifecycle (before `start()` or after `stop()`). */
export class SlotWorkerError extends ForgeError {}

/**
 * Options of `SlotWorker.submit`: a rank (lower runs first, default 0) plus the run's options.
 * The rank orders the worker's jobs; it is not sent with the run's LLM calls.
 */
export interface SubmitOptions extends RunOptions {
  /** Where the job waits: lower runs first, FIFO within a rank; a lower rank preempts. Default 0. */
  rank?: number;
  /**
   * The same number under its old name (lower first), read when `rank` is absent; naming both
   * with different values rejects with `RankConflictError`.
   * @deprecated use rank (lower first)
   */
  priority?: number;
}

interface PendingJob {
  workflow: Workflow;
  userMessage: string;
  runOptions: Omit<RunOptions, "signal">;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  /** Settles (never rejects) once the job's promise has settled. */
  settled: Promise<void>;
}

/**
 * Runs one workflow at a time through a runner. Lower ranks run first, FIFO within a rank; a
 * submission of a lower rank than the running job cancels it (its `submit` rejects with
 * `WorkflowCancelledError`, and its in-flight LLM request is aborted) and runs next.
 * @example
 * const worker = new SlotWorker(runner).start();
 * const report = await worker.submit(calendarWorkflow, "What's next?", { rank: 0 });
 * await worker.stop();
 */
export class SlotWorker {
  readonly runner: WorkflowRunner;
  #actor: SlotWorkerActor | null = null;
  #stopped = false;
  #submitted = 0;
  readonly #jobs = new Map<string, PendingJob>();
  /** Settles when the last started run has settled: a preempted run leaves the slot before the next uses it. */
  #slotFree: Promise<void> = Promise.resolve();

  constructor(runner: WorkflowRunner) {
    this.runner = runner;
  }

  /** Start accepting jobs. Idempotent while running; a stopped worker cannot be restarted. */
  start(): this {
    if (this.#stopped) throw new SlotWorkerError("This SlotWorker was stopped and cannot be restarted");
    if (this.#actor) return this;
    const machine = slotWorkerMachine.provide({
      actors: {
        runJob: fromPromise<unknown, RunJobInput>(({ input, signal }) => this.#runJob(input.id, signal)),
      },
    });
    const { inspect } = this.runner.options;
    const actor = createActor(machine, { ...(inspect && { inspect }) });
    // Listening before start: a failing worker rejects its jobs instead of ending the process.
    actor.subscribe({ error: (error) => this.#fail(actor, error) });
    this.#actor = actor.start();
    return this;
  }

  /**
   * Queue a run of `workflow`; resolves with its terminal tool's result. Rejects with
   * `WorkflowCancelledError` when the job is preempted, cancelled, aborted by `signal`, or still
   * queued at `stop()`; with `SlotWorkerError` before `start()` or after `stop()`; with
   * `RankConflictError` for a `rank` and a `priority` that differ, `RangeError` for a rank that is
   * not a finite number.
   */
  submit(workflow: Workflow, userMessage: string, options: SubmitOptions = {}): Promise<unknown> {
    const { rank: _rank, priority: _priority, signal, ...runOptions } = options;
    const actor = this.#actor;
    if (!actor) {
      return Promise.reject(
        new SlotWorkerError(
          this.#stopped
            ? `SlotWorker is stopped; cannot submit '${workflow.name}'`
            : `SlotWorker is not started; call start() before submitting '${workflow.name}'`,
        ),
      );
    }
    let rank: number;
    try {
      rank = assertFiniteRank(resolveRank(options, "SlotWorker.submit") ?? 0);
    } catch (error) {
      return Promise.reject(error);
    }
    if (signal?.aborted) return Promise.reject(notStartedError(runOptions));

    this.#submitted += 1;
    const id = `job-${this.#submitted}`;
    let resolve!: (value: unknown) => void;
    let reject!: (error: unknown) => void;
    const promise = new Promise<unknown>((resolvePromise, rejectPromise) => {
      resolve = resolvePromise;
      reject = rejectPromise;
    });
    const onAbort = () => this.#cancelJob(id);
    const settled = promise.then(noop, noop).finally(() => {
      signal?.removeEventListener("abort", onAbort);
      this.#jobs.delete(id);
    });
    this.#jobs.set(id, { workflow, userMessage, runOptions, resolve, reject, settled });
    signal?.addEventListener("abort", onAbort, { once: true });
    actor.send({ type: "job.submit", id, rank });
    return promise;
  }

  /** Cancel the running job (its `submit` rejects with `WorkflowCancelledError`); returns false when idle. */
  cancelCurrent(): boolean {
    const actor = this.#actor;
    if (!actor || actor.getSnapshot().context.current === null) return false;
    actor.send({ type: "job.cancel" });
    return true;
  }

  /**
   * Stop the worker: cancel the running job, reject queued jobs with `WorkflowCancelledError`
   * (iteration 0), and resolve once the running job has settled.
   */
  async stop(): Promise<void> {
    const actor = this.#actor;
    this.#stopped = true;
    this.#actor = null;
    if (!actor) return;
    const { current, queue } = actor.getSnapshot().context;
    actor.send({ type: "worker.stop" });
    for (const job of queue) this.#rejectQueued(job.id);
    if (current) await this.#jobs.get(current.id)?.settled;
  }

  /** The worker actor's snapshot (JSON context: queue and current job), or null when not running. */
  getSnapshot(): SlotWorkerSnapshot | null {
    return this.#actor?.getSnapshot() ?? null;
  }

  /** The body of a `runJob` actor: wait for the slot, then run; the actor's signal cancels the run. */
  #runJob(id: string, signal: AbortSignal): Promise<unknown> {
    const job = this.#jobs.get(id);
    if (!job) return Promise.reject(new SlotWorkerError(`Unknown job '${id}'`));
    const previous = this.#slotFree;
    const run = previous.then(() =>
      this.runner.run(job.workflow, job.userMessage, { ...job.runOptions, signal }),
    );
    this.#slotFree = run.then(noop, noop);
    run.then(job.resolve, job.reject);
    return run;
  }

  /** A caller's signal aborted: a queued job is dropped here, a running one through its actor's signal. */
  #cancelJob(id: string): void {
    const actor = this.#actor;
    if (!actor) return;
    const queued = actor.getSnapshot().context.queue.some((job) => job.id === id);
    actor.send({ type: "job.cancel", id });
    if (queued) this.#rejectQueued(id);
  }

  /** The worker actor failed (a bug, not a job's error): every job not yet settled rejects with it. */
  #fail(actor: SlotWorkerActor, error: unknown): void {
    if (this.#actor === actor) this.#actor = null;
    this.#stopped = true;
    for (const job of this.#jobs.values()) job.reject(error);
  }

  #rejectQueued(id: string): void {
    const job = this.#jobs.get(id);
    job?.reject(notStartedError(job.runOptions));
  }
}

function notStartedError(runOptions: Pick<RunOptions, "initialMessages">): WorkflowCancelledError {
  return new WorkflowCancelledError(runOptions.initialMessages ? [...runOptions.initialMessages] : [], [], 0);
}

function noop(): void {}
