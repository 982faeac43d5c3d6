/**
 * Workers run the queue's runs: take a lease, run or resume the workflow with every checkpoint
 * written through the lease, and settle it. Guardrail failures are final; backend failures are
 * retried from the last checkpoint after a backoff (the clients' transient rule, `core/transient.ts`).
 */
import type { ApprovalDecision, ApprovalState } from "../core/approval.ts";
import { AwaitingApprovalError, WorkflowDefinitionError } from "../core/errors.ts";
import { rankOfQueuePriority } from "../core/rank.ts";
import type { RunObserver } from "../core/run-observer.ts";
import { backoffDelayMs, isTransientBackendError } from "../core/transient.ts";
import type { LLMClient } from "../core/types.ts";
import type { Workflow } from "../core/workflow.ts";
import { escalationClientsOf } from "../loop/loop-controls.ts";
import { WorkflowRunner, type WorkflowRunnerOptions } from "../loop/runner.ts";
import {
  LeaseLostError,
  QueueFencedError,
  type RunLease,
  type RunQueue,
  type StoredCheckpoint,
} from "./run-queue.ts";

/** Producers and workers share it: which workflows exist, and the runner that runs them. */
export interface RunRegistry {
  readonly workflows: ReadonlyMap<string, Workflow>;
  readonly runner: WorkflowRunner;
}

/**
 * The workflows a queue's runs may name, by their `name`, and the runner for them.
 * @example const registry = defineRegistry({ workflows: [weather, shop], runner });
 */
export function defineRegistry(options: {
  workflows: readonly Workflow[];
  runner: WorkflowRunner;
}): RunRegistry {
  const workflows = new Map<string, Workflow>();
  for (const workflow of options.workflows) {
    if (workflows.has(workflow.name)) {
      throw new WorkflowDefinitionError(
        `Two workflows are named '${workflow.name}'; names identify queued runs`,
      );
    }
    workflows.set(workflow.name, workflow);
  }
  return { workflows, runner: options.runner };
}

/** Options of `startWorker`. */
export interface WorkerOptions {
  queue: RunQueue & { waitForWork?(signal?: AbortSignal): Promise<void> };
  registry: RunRegistry;
  /**
   * Runs at once (default 1). Each run counts its history on a context manager of its own when the
   * registry's runner has a `ContextManager` (`forRun`); another compactor is shared by every run.
   */
  concurrency?: number;
  /**
   * The client runs infer through instead of the registry runner's: a pool of llama-server
   * endpoints (`new EndpointPool({ endpoints })` from `forge-guardrails/clients`). Each call carries
   * the run's id (the pool keeps the run on one server) and its rank, `rankOfQueuePriority` of its
   * queue priority (a run enqueued with a higher priority waits less for a slot); `endRun` hears
   * each run leave this worker. The runner's `escalation` tiers keep their own clients (a tier's
   * client may be a pool of the stronger model; its `endRun` hears each run leave too), and
   * `toolSubsets` / `activeTools` apply as on the runner.
   */
  endpoints?: LLMClient & { endRun?(runId: string): void };
  /** Leases taken before a backend failure stops being retried (default 5). */
  maxAttempts?: number;
  /** How often to look for work when the engine cannot say (default 200 ms). */
  pollMs?: number;
  /** This worker's name in leases and logs. */
  workerId?: string;
  /**
   * Reports each run to a watch server: `createWorkerWatch({ url })` from the watch entry. Called
   * per lease; its `observer` is given to that run alone (after `observers`' own), on the one
   * registry runner.
   */
  watch?: (run: { runId: string; workflow: string; resumed: boolean; attempt: number }) => {
    readonly observer: RunObserver;
    flush(): Promise<void>;
  };
  /**
   * Observers of each run this worker takes (see `RunObserver`), asked for per lease and given to
   * that run alone (after the registry runner's own): one runner serves every lane, and each run's
   * observers hear only that run.
   * @example
   * observers: (run) => [{ onLLMCallEnd: ({ durationMs }) => metrics.observe(run.workflow, durationMs) }]
   */
  observers?: (run: {
    runId: string;
    workflow: string;
    resumed: boolean;
    attempt: number;
  }) => readonly RunObserver[];
  /**
   * Carries each run's trace across processes: the run's span starts under the trace it was
   * enqueued in (`EnqueueOptions.traceparent`) or, when it resumes, under the span of the attempt
   * that wrote its checkpoint, whichever worker process that was; each checkpoint stores the run's
   * span. `otelObserver()` from `forge-guardrails/otel` is one; give it to `observers` too.
   * @example
   * const otel = otelObserver();
   * startWorker({ queue, registry, observers: () => [otel], tracing: otel });
   */
  tracing?: RunTracing;
  /** Hears each run settled, for logs. */
  onSettled?: (
    runId: string,
    outcome: "completed" | "failed" | "retrying" | "released" | "lost" | "awaiting_approval",
  ) => void;
  /**
   * Hears an error a lane could not settle (the queue unreadable, a settle that failed); the lane
   * goes on after a poll interval. A `QueueFencedError` (an embedded queue's directory taken over by
   * another process while this one was frozen) stops every lane instead: the worker is done, and
   * `close()` resolves at once. Default: one line with the stack on stderr.
   */
  onError?: (error: unknown) => void;
}

/** What a worker needs of a tracer to carry a run's trace across processes (`WorkerOptions.tracing`). */
export interface RunTracing {
  /** Start the run's next span under this W3C `traceparent` (the producer's, or an earlier attempt's span). */
  continueTrace(runId: string, traceparent: string): void;
  /** The W3C `traceparent` of the run's span, open or parked; undefined while it has none. */
  traceparentOf(runId: string): string | undefined;
}

/** A running worker. */
export interface Worker {
  /**
   * Stop taking runs; runs under way are cancelled and handed back to the queue, to resume from
   * their last checkpoint on the next worker. Resolves once they are.
   */
  close(): Promise<void>;
}

/**
 * Start a worker on a queue.
 * @example
 * const worker = startWorker({ queue, registry, concurrency: 4 });
 * process.on("SIGTERM", () => void worker.close());
 */
export function startWorker(options: WorkerOptions): Worker {
  const { queue, registry } = options;
  const stop = new AbortController();
  const workerId = options.workerId ?? `worker-${process.pid}`;
  const { endpoints } = options;
  // The registry runner's options with the pool as its client: one runner for every lane.
  const baseOptions: WorkflowRunnerOptions = endpoints
    ? { ...registry.runner.options, client: endpoints }
    : registry.runner.options;
  const runner = endpoints ? new WorkflowRunner(baseOptions) : registry.runner;
  // Pools among the escalation tiers' clients hear each run leave, like `endpoints`.
  const escalationPools = escalationClientsOf(baseOptions.escalation) as (LLMClient & {
    endRun?(runId: string): void;
  })[];
  const lanes = Array.from({ length: options.concurrency ?? 1 }, () => lane());

  // A lane never dies of one error (a queue that cannot be read, a settle that fails): it says so
  // and goes on after a poll interval, so one bad moment does not stop the worker or crash its process.
  async function lane(): Promise<void> {
    while (!stop.signal.aborted) {
      try {
        const lease = await queue.take(workerId);
        if (lease === null) await idle();
        else await runLease(lease);
      } catch (error) {
        if (stop.signal.aborted) return;
        if (error instanceof QueueFencedError) {
          // Another process took the queue (this one was frozen past its lock): every lane stops
          // at once, and the runs are the new holder's. Said once, by the first lane to hear it.
          stop.abort(error);
          reportError(error);
          return;
        }
        reportError(error);
        await pause(options.pollMs ?? 200);
      }
    }
  }

  function reportError(error: unknown): void {
    if (options.onError) options.onError(error);
    else console.error(`forge worker ${workerId}: ${(error as Error)?.stack ?? String(error)}`);
  }

  /** Wait `ms`, or less when the worker closes. */
  function pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        stop.signal.removeEventListener("abort", done);
        resolve();
      }
      stop.signal.addEventListener("abort", done, { once: true });
    });
  }

  /** Until the engine says work arrived, or a poll interval passed (runs added by other processes). */
  async function idle(): Promise<void> {
    // Its own signal, aborted when the wait ends, so no listener outlives the wait.
    const wait = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    // Not unref'd: a running worker keeps its process alive until it is closed.
    const poll = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, options.pollMs ?? 200);
    });
    try {
      await Promise.race([poll, queue.waitForWork?.(wait.signal).catch(() => {}) ?? poll]);
    } finally {
      clearTimeout(timer);
      wait.abort();
    }
  }

  async function runLease(lease: RunLease): Promise<void> {
    const { job } = lease;
    const workflow = registry.workflows.get(job.workflow);
    if (!workflow) {
      await lease.fail({
        name: "WorkflowDefinitionError",
        message: `No workflow '${job.workflow}' in this worker's registry`,
      });
      options.onSettled?.(job.runId, "failed");
      return;
    }
    // The run stops when the lease is lost or the run cancelled, and when the worker closes.
    const signal = AbortSignal.any([lease.signal, stop.signal]);
    const { tracing } = options;
    // The run's span, stored with each checkpoint: the attempt that resumes from it continues the trace.
    const checkpoint = (snapshot: unknown, meta: Parameters<RunLease["saveCheckpoint"]>[0]["meta"]) => {
      const traceparent = tracing?.traceparentOf(job.runId);
      return lease.saveCheckpoint({ snapshot, meta: traceparent ? { ...meta, traceparent } : meta });
    };
    const storedTrace = lease.checkpoint?.meta.traceparent ?? job.traceparent;
    if (tracing && storedTrace) tracing.continueTrace(job.runId, storedTrace);
    const described = {
      runId: job.runId,
      workflow: job.workflow,
      resumed: lease.checkpoint !== undefined,
      attempt: lease.attempts,
    };
    const watch = options.watch?.(described);
    const observers = [...(options.observers?.(described) ?? []), ...(watch ? [watch.observer] : [])];
    // The queue's priority runs higher first; the run's LLM calls wait by rank, lower first.
    const rank = rankOfQueuePriority(job.priority);
    try {
      const result = lease.checkpoint
        ? await runner.resume(workflow, lease.checkpoint.snapshot as never, {
            meta: lease.checkpoint.meta,
            signal,
            checkpoint,
            rank,
            observers,
            decisions: decisionsToResumeWith(lease.checkpoint, lease),
          })
        : await runner.run(workflow, job.message, {
            runId: job.runId,
            signal,
            checkpoint,
            rank,
            observers,
            ...(job.promptVars && { promptVars: job.promptVars }),
          });
      await lease.complete(result);
      options.onSettled?.(job.runId, "completed");
    } catch (error) {
      if (error instanceof AwaitingApprovalError && !signal.aborted) {
        // Its snapshot was saved as the last checkpoint: the lane is free while a person decides.
        await park(lease, error);
        return;
      }
      await settleFailure(lease, error);
    } finally {
      endpoints?.endRun?.(job.runId);
      for (const pool of escalationPools) pool.endRun?.(job.runId);
      // A watch server that is down was reported by the watch's transport; the run goes on.
      await watch?.flush().catch(() => {});
    }
  }

  async function park(lease: RunLease, waiting: AwaitingApprovalError): Promise<void> {
    try {
      await lease.park(waiting.approval);
      options.onSettled?.(lease.job.runId, "awaiting_approval");
    } catch (error) {
      await settleFailure(lease, error);
    }
  }

  async function settleFailure(lease: RunLease, error: unknown): Promise<void> {
    const { runId } = lease.job;
    try {
      if (lease.signal.aborted) {
        options.onSettled?.(runId, "lost");
        return;
      }
      if (stop.signal.aborted) {
        await lease.release();
        options.onSettled?.(runId, "released");
        return;
      }
      const described = {
        name: (error as Error)?.name ?? "Error",
        message: (error as Error)?.message ?? String(error),
      };
      const retry = isTransientBackendError(error) && lease.attempts < (options.maxAttempts ?? 5);
      if (retry) await pause(backoffDelayMs(lease.attempts - 1, RUN_BACKOFF, undefined, Math.random()) ?? 0);
      if (retry && stop.signal.aborted) {
        // Closed during the backoff: hand the run back rather than count a retry.
        await lease.release();
        options.onSettled?.(runId, "released");
        return;
      }
      await lease.fail(described, { retry });
      options.onSettled?.(runId, retry ? "retrying" : "failed");
    } catch (settleError) {
      if (!(settleError instanceof LeaseLostError)) throw settleError;
      options.onSettled?.(runId, "lost");
    }
  }

  const running = Promise.all(lanes);
  // Lanes catch their own errors; this only keeps a rejection from going unhandled before close().
  running.catch(reportError);
  return {
    async close() {
      stop.abort(new Error("The worker is closing"));
      await running;
    },
  };
}

/** The worker's backoff before a run's next attempt: no `Retry-After` limit (the run waits in the queue, not in a call). */
const RUN_BACKOFF = { retryBaseMs: 250, retryMaxMs: 10_000, maxRetryAfterMs: Number.POSITIVE_INFINITY };

/**
 * The decisions a parked run resumes with: those the queue kept that its checkpoint does not hold
 * yet, and only while the checkpoint is the parked snapshot (a run that went on past its approval
 * and was interrupted resumes from a later checkpoint, with nothing to decide).
 */
function decisionsToResumeWith(checkpoint: StoredCheckpoint, lease: RunLease): ApprovalDecision[] {
  const snapshot = checkpoint.snapshot as {
    value?: unknown;
    context?: { approval?: ApprovalState | null };
  };
  const waiting = snapshot?.value === "awaitingApproval" ? snapshot.context?.approval : undefined;
  if (!waiting || !lease.approval) return [];
  // Only this batch's calls (the queue may still hold an earlier batch's decisions), once each.
  const pending = new Set(waiting.pending.map((call) => call.callId));
  const taken = new Set(waiting.decisions.map((decision) => decision.callId));
  return lease.approval.decisions.filter(
    (decision) => pending.has(decision.callId) && !taken.has(decision.callId),
  );
}
