/**
 * Batch runs: plan every (run, scenario, config) task, skip the ones a resumed JSONL already
 * holds, run the rest a few at a time, and append one row (and one trace) per finished run.
 * A run whose backend fails is recorded as an error row and the batch goes on.
 */
import { basename } from "node:path";
import { configLabel, type LoopConfig, LoopKind } from "../ablation.ts";
import type { BackendSession } from "../backends/registry.ts";
import { anthropicPrice, costOfExchanges } from "../metrics/prices.ts";
import { CONTEXT_EXCEEDED } from "../run/context-limit.ts";
import { runForge } from "../run/forge-run.ts";
import { describeError } from "../run/recording-client.ts";
import { ReferenceClient } from "../run/reference-client.ts";
import { type RunOutcome, RunStatus } from "../run/types.ts";
import type { EvalScenario } from "../scenarios/scenario.ts";
import type { BackendSettings } from "./backend-settings.ts";
import { openBatchWriter } from "./batch-writer.ts";
import { type LineProblem, readJsonl, repairTail } from "./jsonl.ts";
import { ROW_SCHEMA_VERSION, type RunRow, runRowSchema, type Versions } from "./row.ts";

/** One run to make. */
export interface RunTask {
  key: string;
  scenario: EvalScenario;
  config: LoopConfig;
  runIndex: number;
  seed: number;
}

/** What identifies a batch's rows besides the scenario, config and run. */
export interface BatchIdentity {
  backend: string;
  model: string;
  baseSeed: number;
  stream: boolean;
  /**
   * The `--tool-mode` / `--think` the batch was asked for, when given: part of each key, so runs
   * of two modes (or think on and off) can share one file and be compared side by side.
   */
  variant?: { toolMode?: string; think?: string };
}

/**
 * The key of one run: backend, model, config, scenario, run index and base seed, then
 * `mode-<tool mode>` and `think-<think>` when the batch named them.
 */
export function runKey(
  identity: BatchIdentity,
  config: LoopConfig,
  scenario: string,
  runIndex: number,
): string {
  const label = `${configLabel(config)}${identity.stream && config.loop === LoopKind.FORGE ? "+stream" : ""}`;
  return [
    identity.backend,
    identity.model,
    label,
    scenario,
    `run${runIndex}`,
    `seed${identity.baseSeed}`,
    ...(identity.variant?.toolMode ? [`mode-${identity.variant.toolMode}`] : []),
    ...(identity.variant?.think ? [`think-${identity.variant.think}`] : []),
  ].join("|");
}

/**
 * Every task, run index outermost so an interrupted batch has complete pairs across configs.
 * The seed depends on the run index only: every config of a run sees the same faults.
 */
export function planTasks(
  identity: BatchIdentity,
  scenarios: readonly EvalScenario[],
  configs: readonly LoopConfig[],
  runs: number,
): RunTask[] {
  const tasks: RunTask[] = [];
  for (let runIndex = 0; runIndex < runs; runIndex += 1) {
    for (const scenario of scenarios) {
      for (const config of configs) {
        tasks.push({
          key: runKey(identity, config, scenario.id, runIndex),
          scenario,
          config,
          runIndex,
          seed: identity.baseSeed + runIndex,
        });
      }
    }
  }
  return tasks;
}

/** Where a resumed batch stands. */
export interface ResumeState {
  doneKeys: Set<string>;
  problems: LineProblem[];
  /** Bytes of an interrupted last line that were cut off. */
  repairedBytes: number;
  /** The settings each row that records them ran with, by key. */
  settings: Map<string, BackendSettings>;
}

/** Read what an existing JSONL already holds, repairing an interrupted last line first. */
export function loadResumeState(out: string): ResumeState {
  const repairedBytes = repairTail(out);
  const { rows, problems } = readJsonl(out, runRowSchema);
  const settings = new Map<string, BackendSettings>();
  for (const row of rows) if (row.settings) settings.set(row.key, row.settings);
  return { doneKeys: new Set(rows.map((row) => row.key)), problems, repairedBytes, settings };
}

/** Options of `runBatch`. */
export interface BatchOptions {
  tasks: readonly RunTask[];
  session: BackendSession;
  identity: BatchIdentity;
  versions: Versions;
  batchId: string;
  /** The JSONL file rows are appended to. */
  out: string;
  /** The JSONL file traces are appended to, or null for none. */
  tracesOut: string | null;
  /** Runs in flight at once. */
  concurrency: number;
  /** Keys to skip (already in `out`). */
  skip?: ReadonlySet<string>;
  onRowWritten?: (row: RunRow, finished: number, total: number) => void;
  signal?: AbortSignal;
  /**
   * Runs a task somewhere else (a worker thread, or a queue's workers); default: in this thread.
   * A rejection becomes an error row, unless `signal` was aborted meanwhile (then no row).
   */
  execute?: (task: RunTask) => Promise<RunOutcome>;
}

/** What a batch did. */
export interface BatchSummary {
  planned: number;
  skipped: number;
  written: number;
  /** Pending runs another process wrote to the same file meanwhile (two `--resume`s split a batch). */
  elsewhere: number;
  /** Runs the backend or harness failed. */
  errors: number;
  /** Runs whose prompt outgrew the context (`context_exceeded`), not errors. */
  overflows: number;
  wallMs: number;
}

/**
 * Run the tasks not yet done and append their rows. Other processes may run the same batch on the
 * same file at once (two `--resume`s): each task is claimed before it runs (see `openBatchWriter`),
 * so they split the tasks, and a row is never appended twice.
 */
export async function runBatch(options: BatchOptions): Promise<BatchSummary> {
  const started = performance.now();
  const pending = options.tasks.filter((task) => !options.skip?.has(task.key));
  const summary: BatchSummary = {
    planned: options.tasks.length,
    skipped: options.tasks.length - pending.length,
    written: 0,
    elsewhere: 0,
    errors: 0,
    overflows: 0,
    wallMs: 0,
  };
  const keys = pending.map((task) => task.key);
  const writer = await openBatchWriter(options.out, options.tracesOut);
  const lane = async () => {
    let claim = await writer.claimNext(keys);
    while (!options.signal?.aborted) {
      if (claim.kind === "done") return;
      if (claim.kind === "wait") {
        // The runs left are another process's: wait in case it dies and leaves them.
        await sleep(CLAIM_POLL_MS, options.signal);
        claim = await writer.claimNext(keys);
        continue;
      }
      const task = pending[claim.index] as RunTask;
      const outcome = options.execute
        ? await options
            .execute(task)
            // Stopped while it waited (a queue's collector): no row; a resume takes the run up.
            .catch((error: unknown) =>
              options.signal?.aborted
                ? null
                : harnessFailure(task, `${task.scenario.id}-${task.seed}`, error),
            )
        : await executeTask(task, options.session, options.identity.stream);
      if (outcome === null) return;
      const row = toRow(task, outcome, options);
      // The row, then the next claim, under one hold of the file's lock.
      const written = await writer.appendAndClaimNext(task.key, row, outcome.trace, keys);
      claim = written.claim;
      if (!written.appended) continue;
      summary.written += 1;
      if (row.failureKind === CONTEXT_EXCEEDED) summary.overflows += 1;
      else if (row.status === RunStatus.ERROR) summary.errors += 1;
      options.onRowWritten?.(row, summary.written, pending.length);
    }
  };
  try {
    await Promise.all(
      Array.from({ length: Math.max(1, Math.min(options.concurrency, pending.length)) }, lane),
    );
  } finally {
    await writer.close();
  }
  summary.elsewhere = keys.filter((key) => writer.doneKeys.has(key)).length - summary.written;
  summary.wallMs = performance.now() - started;
  return summary;
}

/** How often a batch whose remaining runs another process holds looks again. */
const CLAIM_POLL_MS = 500;

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** Run one task against a backend session; a harness failure becomes an error outcome. */
export async function executeTask(
  task: RunTask,
  session: BackendSession,
  stream: boolean,
): Promise<RunOutcome> {
  const target = { scenario: task.scenario, seed: task.seed };
  const runId = `${task.scenario.id}-${task.seed}`;
  try {
    if (task.config.loop === LoopKind.AI_SDK) {
      if (!session.peerEndpoint)
        throw new Error(`backend ${session.backend} has no OpenAI-compatible endpoint for the AI SDK loop`);
      // Loaded on demand: the AI SDK is only needed when the peer loop runs.
      const { runPeer } = await import("../run/peer-run.ts");
      return await runPeer({
        key: task.key,
        scenario: task.scenario,
        endpoint: session.peerEndpoint(target),
        runId,
      });
    }
    const client = session.createClient(target);
    const callFormat = (await session.callFormat?.()) ?? null;
    try {
      return await runForge({
        key: task.key,
        scenario: task.scenario,
        config: task.config,
        client: task.config.loop === LoopKind.REFERENCE ? new ReferenceClient(client, task.scenario) : client,
        runId,
        stream,
        ...(session.tokenizer && { tokenizer: session.tokenizer }),
        ...(callFormat && { callFormat }),
        ...(task.config.escalation &&
          session.createEscalationClient && {
            escalationClient: session.createEscalationClient(target, task.config.escalation.profile),
          }),
      });
    } finally {
      await session.releaseClient?.(client);
    }
  } catch (error) {
    return harnessFailure(task, runId, error);
  }
}

/** A run the harness itself could not carry out, as an error outcome. */
export function harnessFailure(task: RunTask, runId: string, error: unknown): RunOutcome {
  const described = describeError(error);
  return {
    measurement: {
      status: RunStatus.ERROR,
      completed: false,
      accurate: false,
      answerProblem: null,
      stateProblem: null,
      failureKind: "harness_error",
      errorName: described.name,
      errorMessage: described.message,
      terminal: null,
      iterations: 0,
      idealIterations: task.scenario.idealIterations,
      wastedCalls: 0,
      efficiency: null,
      toolCalls: 0,
      toolErrors: 0,
      textResponses: 0,
      rescues: 0,
      nudges: { retry: 0, unknown_tool: 0, step: 0, prerequisite: 0 },
      forcedRetries: 0,
      compactions: 0,
      maxPhase: 0,
      inputTokens: 0,
      outputTokens: 0,
      peakContextTokens: 0,
      cachedTokens: 0,
      evaluatedTokens: 0,
      tokenSource: "none",
      wallMs: 0,
      startedFromSnapshot: false,
    },
    trace: {
      key: task.key,
      scenario: task.scenario.id,
      config: task.config,
      runId,
      initialSnapshot: null,
      startMessages: [],
      messages: [],
      exchanges: [],
      compactions: [],
      transitions: [],
      finalSnapshot: null,
    },
  };
}

function toRow(task: RunTask, outcome: RunOutcome, options: BatchOptions): RunRow {
  const { session, identity } = options;
  return {
    schema: ROW_SCHEMA_VERSION,
    key: task.key,
    batchId: options.batchId,
    timestamp: new Date().toISOString(),
    backend: session.backend,
    model: session.model,
    simulated: session.simulated,
    profile: session.profile,
    settings: session.settings,
    baseSeed: identity.baseSeed,
    seed: task.seed,
    runIndex: task.runIndex,
    configLabel: configLabel(task.config),
    config: task.config,
    stream: identity.stream && task.config.loop === LoopKind.FORGE,
    scenario: task.scenario.id,
    category: task.scenario.category,
    tags: [...task.scenario.tags],
    stateful: task.scenario.stateful,
    versions: options.versions,
    ...outcome.measurement,
    costUsd: costOf(session, outcome),
    trace: options.tracesOut ? basename(options.tracesOut) : null,
  };
}

/**
 * An Anthropic run's cost from the backend's token counts and the dated price table; null for
 * other backends and for a model the table does not list.
 */
function costOf(session: BackendSession, outcome: RunOutcome): number | null {
  if (session.backend !== "anthropic") return null;
  const price = anthropicPrice(session.model);
  return price ? costOfExchanges(outcome.trace.exchanges, price) : null;
}
