/**
 * `npm run eval -- run`: validate the options, plan the batch, run it against the backend with
 * progress, append rows, then print the report.
 */
import { existsSync, mkdirSync } from "node:fs";
import { availableParallelism } from "node:os";
import { dirname } from "node:path";
import { z } from "zod";
import { CompactStrategyName, configLabel, resolveConfigs } from "../ablation.ts";
import { BACKENDS, type EvalSampling, startBackend } from "../backends/registry.ts";
import { describeSettings, settingsConflict } from "../batch/backend-settings.ts";
import { type BatchIdentity, loadResumeState, planTasks, type RunTask, runBatch } from "../batch/batch.ts";
import { withJsonlLock } from "../batch/batch-writer.ts";
import { appendPlan } from "../batch/plan.ts";
import { currentVersions } from "../batch/row.ts";
import { startWorkerPool, type WorkerPool } from "../batch/worker-pool.ts";
import { createQueueCollector, type QueueCollector } from "../queue/collector.ts";
import type { QueuedBackendOptions } from "../queue/eval-job.ts";
import { queueBatchIdFor } from "../queue/eval-job.ts";
import { openEvalQueue } from "../queue/open-queue.ts";
import { renderMarkdown } from "../report/markdown.ts";
import { renderTerminalReport } from "../report/table.ts";
import { loadRows, reportOf, tracesPathFor, writeHtmlReport, writeText } from "../report/write-report.ts";
import { selectScenarios } from "../scenarios/index.ts";
import { listOption } from "./list-option.ts";
import { createProgress, type ProgressReporter, silentProgress } from "./progress.ts";

const positiveInteger = z.coerce.number().int().positive();

/** A number option that passes `check`; every failure, a non-number included, reads `message`. */
function numberOption(message: string, check: (value: number) => boolean) {
  return z.coerce.number({ error: message }).refine(check, { error: message });
}

/** The options of `npm run eval -- run`, as commander hands them over. */
export const evalOptionsSchema = z.object({
  runs: positiveInteger.default(1),
  scenario: listOption(),
  tags: listOption(),
  ablation: listOption(["reforged"]),
  peer: z.boolean().default(false),
  ideal: z.boolean().default(false),
  backend: z.string().default("sim-model"),
  model: z.string().optional(),
  baseUrl: z.string().optional(),
  apiKey: z.string().optional(),
  profile: z.string().optional(),
  seed: numberOption("must be a whole number", Number.isInteger).default(0),
  temperature: numberOption("must be a number from 0 to 2", (value) => value >= 0 && value <= 2).optional(),
  topP: numberOption("must be a number above 0 and at most 1", (value) => value > 0 && value <= 1).optional(),
  topK: numberOption(
    "must be a whole number ≥ 0 (0: no top-k limit on llama.cpp)",
    (value) => Number.isInteger(value) && value >= 0,
  ).optional(),
  llamaCppMode: z.enum(["functions", "free"], { error: "must be functions or free" }).optional(),
  threads: numberOption(
    "must be a whole number ≥ 1",
    (value) => Number.isInteger(value) && value >= 1,
  ).optional(),
  toolMode: z.enum(["native", "prompt", "auto"], { error: "must be native, prompt or auto" }).optional(),
  think: z.enum(["on", "off", "auto"], { error: "must be on, off or auto" }).optional(),
  stream: z.boolean().default(false),
  compactStrategy: z.enum(Object.values(CompactStrategyName) as [string, ...string[]]).optional(),
  out: z.string().optional(),
  resume: z.boolean().default(false),
  concurrency: positiveInteger.optional(),
  workers: positiveInteger.optional(),
  traces: z.boolean().default(true),
  progress: z.boolean().default(true),
  html: z.string().optional(),
  markdown: z.string().optional(),
  report: z.boolean().default(true),
  delayMs: z.coerce.number().int().nonnegative().optional(),
  /** A Redis URL or an embedded queue's directory: the runs go there, for `eval worker`s to make. */
  queue: z.string().min(1).optional(),
  /** Set by a batch config's `llamaserver` target (no flag): the server it started, for the rows' settings. */
  managedServer: z
    .object({
      managedServer: z.literal("llamaserver"),
      budgetMode: z.enum(["backend", "manual", "forge-full", "forge-fast"]),
      contextTokens: z.number().int().positive(),
    })
    .optional(),
});
export type EvalOptions = z.infer<typeof evalOptionsSchema>;

/** Where the command writes. */
export interface EvalIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  progress?: ProgressReporter;
}

/** Raised for options that cannot run; the message says what to change. */
export class EvalUsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EvalUsageError";
  }
}

const defaultIo: EvalIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

/** Run `npm run eval -- run` with raw options; resolves with the rows file written. */
export async function runEval(
  rawOptions: unknown,
  io: EvalIo = defaultIo,
  signal?: AbortSignal,
): Promise<string> {
  const parsed = evalOptionsSchema.safeParse(rawOptions);
  if (!parsed.success) {
    throw new EvalUsageError(
      parsed.error.issues.map((issue) => `--${optionName(issue.path)}: ${issue.message}`).join("; "),
    );
  }
  const options = parsed.data;
  if (!(options.backend in BACKENDS)) {
    throw new EvalUsageError(
      `Unknown backend '${options.backend}'. Valid backends: ${Object.keys(BACKENDS).join(", ")}`,
    );
  }
  const scenarios = selectScenarios(options.scenario, options.tags);
  if (scenarios.length === 0)
    throw new EvalUsageError("The --scenario / --tags selection matches no scenario");
  const configs = resolveConfigs(options.ablation, {
    peer: options.peer,
    ideal: options.ideal,
    ...(options.compactStrategy && { compactStrategy: options.compactStrategy as CompactStrategyName }),
  });
  const out =
    options.out ??
    `eval/results/eval-${options.backend}-${new Date().toISOString().replace(/[:.]/g, "-")}.jsonl`;
  if (existsSync(out) && !options.resume) {
    throw new EvalUsageError(`${out} already exists: pass --resume to continue it, or choose another --out`);
  }
  mkdirSync(dirname(out), { recursive: true });
  // Under the file's lock: another eval writing this file may be mid-row (not an interrupted line).
  const resumeState = options.resume
    ? await withJsonlLock(out, () => loadResumeState(out))
    : { doneKeys: new Set<string>(), problems: [], repairedBytes: 0, settings: new Map() };
  if (resumeState.repairedBytes > 0) {
    io.stderr(`resume: cut an interrupted last line (${resumeState.repairedBytes} bytes) off ${out}\n`);
  }
  for (const problem of resumeState.problems)
    io.stderr(`resume: ${out}:${problem.line}: ${problem.message}\n`);

  const sampling: EvalSampling = {
    ...(options.temperature !== undefined && { temperature: options.temperature }),
    ...(options.topP !== undefined && { topP: options.topP }),
    ...(options.topK !== undefined && { topK: options.topK }),
  };
  // What a queue's workers start the same backend with: no scenarios (they serve all), no key.
  const backendOptions: QueuedBackendOptions = {
    ...(Object.keys(sampling).length > 0 && { sampling }),
    ...(options.llamaCppMode && { llamaCppMode: options.llamaCppMode }),
    ...(options.threads !== undefined && { threads: options.threads }),
    ...(options.toolMode && { toolMode: options.toolMode }),
    ...(options.think && { think: options.think }),
    ...(options.model && { model: options.model }),
    ...(options.baseUrl && { baseUrl: options.baseUrl }),
    ...(options.profile && { profile: options.profile }),
    ...(options.delayMs !== undefined && { delayMs: options.delayMs }),
  };
  // The queue first: a wrong spec or an unreachable server fails before anything starts or is written.
  const evalQueue = options.queue ? await openEvalQueue(options.queue, "collector") : null;
  const session = await startBackend(options.backend, {
    ...backendOptions,
    ...(options.apiKey && { apiKey: options.apiKey }),
    scenarios,
  }).catch(async (error: unknown) => {
    await evalQueue?.queue.close();
    throw error;
  });
  if (options.managedServer) session.settings = { ...session.settings, ...options.managedServer };
  let pool: WorkerPool | null = null;
  let collector: QueueCollector | null = null;
  try {
    if (configs.some((config) => config.loop === "ai_sdk") && !session.peerEndpoint) {
      throw new EvalUsageError(
        `--backend ${options.backend} has no OpenAI-compatible endpoint for the AI SDK loop (--peer)`,
      );
    }
    const identity = identityOf(options, session);
    const tasks = planTasks(identity, scenarios, configs, options.runs);
    const conflict = settingsConflict(
      resumeState.settings,
      tasks.map((task) => task.key),
      session.settings,
    );
    if (conflict) {
      throw new EvalUsageError(
        `--resume: ${out} holds runs made with other settings (${conflict}): pass the same options, or choose another --out`,
      );
    }
    appendPlan(out, { kind: "target", target: targetName(identity), configs: keysByConfig(tasks) });
    const pending = tasks.filter((task) => !resumeState.doneKeys.has(task.key)).length;
    io.stderr(
      `eval: ${scenarios.length} scenarios × ${configs.length} configs × ${options.runs} runs = ${tasks.length} runs on ${session.backend} (${session.model})${
        session.simulated ? "" : `, ${describeSettings(session.settings)}`
      }${options.resume ? `, ${tasks.length - pending} already in ${out}` : ""}\n`,
    );
    // sim-model batches are CPU-bound in the agent loop: spread them over the cores.
    const workers = options.workers ?? (session.simulated ? Math.min(2, availableParallelism()) : 1);
    const concurrency = options.concurrency ?? (session.simulated ? 4 : 1);
    collector = evalQueue
      ? createQueueCollector({
          queue: evalQueue,
          batchId: queueBatchIdFor(out, options.resume === true),
          backend: options.backend,
          backendOptions,
          stream: options.stream,
          ...(signal && { signal }),
        })
      : null;
    if (collector) {
      await collector.enqueue(tasks.filter((task) => !resumeState.doneKeys.has(task.key)));
      io.stderr(`eval: ${pending} runs on the queue ${options.queue}; waiting for its workers\n`);
    }
    pool =
      !collector && workers > 1 && pending > 1
        ? await startWorkerPool(workers, options.backend, session.workerOptions, options.stream)
        : null;
    const progress = io.progress ?? (options.progress ? createProgress() : silentProgress);
    progress.start(pending);
    const summary = await runBatch({
      tasks,
      session,
      identity,
      versions: currentVersions(),
      batchId: new Date().toISOString(),
      out,
      tracesOut: options.traces ? tracesPathFor(out) : null,
      concurrency: collector?.concurrency ?? concurrency * workers,
      ...(pool && { execute: (task) => (pool as WorkerPool).execute(task) }),
      ...(collector && { execute: (task) => (collector as QueueCollector).execute(task) }),
      skip: resumeState.doneKeys,
      onRowWritten: (row, finished, total) => progress.update(row, finished, total),
      ...(signal && { signal }),
    });
    progress.stop();
    io.stderr(
      `eval: wrote ${summary.written} rows (${summary.overflows} context overflows, ${summary.errors} backend errors, ${summary.skipped} skipped) to ${out} in ${(summary.wallMs / 1000).toFixed(1)} s${
        summary.elsewhere > 0 ? `; ${summary.elsewhere} more by another eval writing the same file` : ""
      }\n`,
    );
  } finally {
    await pool?.close();
    await (collector ?? evalQueue?.queue)?.close();
    await session.close();
  }

  const keys = new Set(
    planTasks(identityOf(options, session), scenarios, configs, options.runs).map((task) => task.key),
  );
  const loaded = loadRows([out]);
  const rows = loaded.rows.filter((row) => keys.has(row.key));
  const report = reportOf(rows);
  if (options.report) io.stdout(`${renderTerminalReport(report)}\n`);
  if (options.markdown) {
    writeText(options.markdown, renderMarkdown(report, { command: commandLine() }));
    io.stderr(`eval: Markdown report → ${options.markdown}\n`);
  }
  if (options.html) {
    const written = writeHtmlReport(report, {
      outDir: options.html,
      tracesFiles: [tracesPathFor(out)],
      command: commandLine(),
      source: out,
    });
    io.stderr(`eval: dashboard → ${written.dashboard} (${written.timelines} timelines)\n`);
  }
  return out;
}

/** What identifies this batch's rows: backend, model, seed, stream, and the tool mode / think asked for. */
function identityOf(options: EvalOptions, session: { backend: string; model: string }): BatchIdentity {
  const variant = {
    ...(options.toolMode && { toolMode: options.toolMode }),
    ...(options.think && { think: options.think }),
  };
  return {
    backend: session.backend,
    model: session.model,
    baseSeed: options.seed,
    stream: options.stream,
    ...(Object.keys(variant).length > 0 && { variant }),
  };
}

/** The target in words for the plan: backend, model, tool mode and think when given. */
export function targetName(identity: BatchIdentity): string {
  const variant = [
    ...(identity.variant?.toolMode ? [`tool mode ${identity.variant.toolMode}`] : []),
    ...(identity.variant?.think ? [`think ${identity.variant.think}`] : []),
  ];
  return `${identity.backend} ${identity.model}${variant.length > 0 ? ` (${variant.join(", ")})` : ""}`;
}

/** Planned keys by config label. */
export function keysByConfig(tasks: readonly RunTask[]): Record<string, string[]> {
  const configs: Record<string, string[]> = {};
  for (const task of tasks) {
    const label = configLabel(task.config);
    const keys = configs[label] ?? [];
    keys.push(task.key);
    configs[label] = keys;
  }
  return configs;
}

/** The option a zod issue path names, as typed: `["topP"]` → `top-p`. */
function optionName(path: readonly PropertyKey[]): string {
  return path.map((part) => String(part).replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)).join(".");
}

/** The command line as typed (for reports). */
export function commandLine(): string {
  return ["forge", ...process.argv.slice(2)].join(" ");
}
