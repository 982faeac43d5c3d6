/**
 * A batch config file: several targets (a GGUF run by a llama-server the ServerManager starts and
 * stops, an OpenAI-compatible URL, Ollama, node-llama-cpp, Anthropic, the sim-model) qualified
 * one after another into one resumable JSONL, then reported together.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { basename, dirname } from "node:path";
import { z } from "zod";
import { BudgetMode } from "../../src/server/budget-mode.ts";
import { launchConfigSchema } from "../../src/server/launch-config.ts";
import { resolveLlamaServerPath } from "../../src/server/llama-server-path.ts";
import { ServerManager } from "../../src/server/server-manager.ts";
import { setupBackend } from "../../src/server/setup-backend.ts";
import { resolveConfigs } from "../ablation.ts";
import { type BatchIdentity, planTasks, type RunTask } from "../batch/batch.ts";
import { readJsonl } from "../batch/jsonl.ts";
import { appendPlan } from "../batch/plan.ts";
import { runRowSchema } from "../batch/row.ts";
import { selectScenarios } from "../scenarios/index.ts";
import { FAULT_PROFILES } from "../sim-model/profiles.ts";
import { createBatchProgress } from "./progress.ts";
import { type EvalIo, EvalUsageError, keysByConfig, runEval, targetName } from "./run-eval.ts";

const toolMode = z.enum(["native", "prompt", "auto"]).optional();
const think = z.enum(["on", "off", "auto"]).optional();
const sampling = {
  temperature: z.number().min(0).max(2).optional(),
  topP: z.number().gt(0).max(1).optional(),
  topK: z.number().int().nonnegative().optional(),
};

/** One target of a batch, by backend. */
export const batchTargetSchema = z.discriminatedUnion("backend", [
  z
    .strictObject({
      backend: z.literal("llamaserver"),
      /** The GGUF llama-server runs; started before the target's runs and stopped after them. */
      gguf: z.string().min(1),
      /** The model name in rows; default the GGUF's file stem. */
      model: z.string().min(1).optional(),
      /** ServerManager launch options besides the GGUF (ctx, threads, slots, cache types, extraFlags…). */
      launch: launchConfigSchema.omit({ ggufPath: true }).partial().default({}),
      /**
       * The budget mode of the ServerManager (setupBackend): how llama-server's context is sized.
       * `backend` (default): the launch options as given; `manual`: `-c` from `budgetTokens`;
       * `forge-full`: no `-c`, llama-server sizes the context to the memory it has; `forge-fast`:
       * half of that (llama-server restarted with it).
       */
      budget: z
        .enum(Object.values(BudgetMode) as [BudgetMode, ...BudgetMode[]], {
          error: `must be one of ${Object.values(BudgetMode).join(", ")}`,
        })
        .optional(),
      /** The context in tokens for `budget: "manual"`. */
      budgetTokens: z.number().int().positive().optional(),
      toolMode,
      think,
      ...sampling,
    })
    .superRefine((target, context) => {
      if (target.budget === "manual" && target.budgetTokens === undefined) {
        context.addIssue({
          code: "custom",
          path: ["budgetTokens"],
          message: 'budget "manual" needs budgetTokens (the context size in tokens, e.g. 4096)',
        });
      }
      if (target.budget !== "manual" && target.budgetTokens !== undefined) {
        context.addIssue({
          code: "custom",
          path: ["budgetTokens"],
          message: `budgetTokens is used only with budget "manual" (this target's budget is ${target.budget ?? "backend, the default"})`,
        });
      }
    }),
  z.strictObject({
    backend: z.literal("openai-compatible"),
    baseUrl: z.url(),
    model: z.string().min(1),
    apiKey: z.string().optional(),
    toolMode,
    think,
    ...sampling,
  }),
  z.strictObject({
    backend: z.literal("ollama"),
    model: z.string().min(1),
    baseUrl: z.url().optional(),
    think,
    ...sampling,
  }),
  z.strictObject({
    backend: z.literal("llama-cpp"),
    /** The GGUF path. */
    model: z.string().min(1),
    llamaCppMode: z.enum(["functions", "free"]).optional(),
    threads: z.number().int().positive().optional(),
    ...sampling,
  }),
  z.strictObject({
    backend: z.literal("anthropic"),
    model: z.string().min(1),
    apiKey: z.string().optional(),
    ...sampling,
  }),
  z.strictObject({
    backend: z.literal("sim-model"),
    profile: z.string().optional(),
    toolMode,
  }),
]);
export type BatchTarget = z.infer<typeof batchTargetSchema>;

/** A batch config file. */
export const batchConfigSchema = z.strictObject({
  /** The JSONL every target's rows go to (resumed when it exists). */
  out: z.string().min(1),
  runs: z.number().int().positive().default(1),
  scenarios: z.array(z.string()).default([]),
  tags: z.array(z.string()).default([]),
  ablation: z.array(z.string()).default(["reforged"]),
  seed: z.number().int().default(0),
  targets: z.array(batchTargetSchema).min(1),
});
export type BatchConfig = z.infer<typeof batchConfigSchema>;

/** Read and validate a batch config (JSON); every problem names its path in the file. */
export function loadBatchConfig(path: string): BatchConfig {
  if (!existsSync(path)) throw new EvalUsageError(`batch config ${path} does not exist`);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new EvalUsageError(`batch config ${path} is not JSON: ${(error as Error).message}`);
  }
  const parsed = batchConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`,
    );
    throw new EvalUsageError(`batch config ${path}: ${problems.join("; ")}`);
  }
  return parsed.data;
}

/** A target in words, for progress lines. */
export function describeTarget(target: BatchTarget): string {
  if (target.backend === "llamaserver") return `llamaserver ${target.model ?? ggufStem(target.gguf)}`;
  if (target.backend === "sim-model") return `sim-model ${target.profile ?? "mixed"}`;
  return `${target.backend} ${target.model}`;
}

function ggufStem(path: string): string {
  return basename(path).replace(/\.gguf$/i, "");
}

/**
 * Why a target cannot run, or null when it answers: a GGUF that is not there or no llama-server
 * binary (nothing is started), an OpenAI-compatible or Ollama server that does not answer
 * `/models` or `/api/tags` (or lacks the model), Anthropic without a key, a llama-cpp model file
 * that is not there, an unknown sim-model profile.
 */
export async function probeTarget(
  target: BatchTarget,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string | null> {
  const answers = async (url: string, headers: Record<string, string> = {}): Promise<string | null> => {
    try {
      const response = await fetch(url, { headers, signal: AbortSignal.timeout(5_000) });
      return response.ok ? await response.text() : `GET ${url} answered HTTP ${response.status}`;
    } catch (error) {
      return `GET ${url} failed: ${(error as Error).message}`;
    }
  };
  switch (target.backend) {
    case "llamaserver": {
      if (!existsSync(target.gguf)) return `GGUF ${target.gguf} does not exist`;
      try {
        resolveLlamaServerPath();
      } catch (error) {
        return (error as Error).message;
      }
      return null;
    }
    case "openai-compatible": {
      const url = `${target.baseUrl.replace(/\/+$/, "")}/models`;
      const body = await answers(url, target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {});
      return body === null || body.startsWith("GET ") ? body : null;
    }
    case "ollama": {
      const url = `${(target.baseUrl ?? "http://127.0.0.1:11434").replace(/\/+$/, "")}/api/tags`;
      const body = await answers(url);
      if (body === null || body.startsWith("GET ")) return body;
      const names = ((JSON.parse(body) as { models?: { name?: string }[] }).models ?? []).map(
        (model) => model.name,
      );
      return names.includes(target.model) || names.includes(`${target.model}:latest`)
        ? null
        : `Ollama has no model '${target.model}' (ollama pull ${target.model}); it has: ${names.join(", ") || "none"}`;
    }
    case "llama-cpp":
      return existsSync(target.model) ? null : `GGUF ${target.model} does not exist`;
    case "anthropic":
      return target.apiKey || env.ANTHROPIC_API_KEY ? null : "no API key: set apiKey or ANTHROPIC_API_KEY";
    case "sim-model":
      return target.profile === undefined || target.profile in FAULT_PROFILES
        ? null
        : `unknown profile '${target.profile}' (${Object.keys(FAULT_PROFILES).join(", ")})`;
  }
}

/** Probe every target; throws an `EvalUsageError` naming each one that cannot run. */
export async function probeTargets(config: BatchConfig, io: EvalIo): Promise<void> {
  const problems: string[] = [];
  for (const [index, target] of config.targets.entries()) {
    const problem = await probeTarget(target);
    io.stderr(`probe: target ${index + 1} ${describeTarget(target)}: ${problem ?? "ok"}\n`);
    if (problem) problems.push(`target ${index + 1} (${describeTarget(target)}): ${problem}`);
  }
  if (problems.length > 0) throw new EvalUsageError(`--probe: ${problems.join("; ")}`);
}

/** Options of `runBatchConfig`. */
export interface BatchRunOptions {
  progress?: boolean;
  signal?: AbortSignal;
  /** Makes the ServerManager of a `llamaserver` target (tests pass one with a known binary). */
  createServerManager?: () => ServerManager;
}

/**
 * Run every target of `config` in order into `config.out` (resuming what it holds), starting and
 * stopping llama-server for `llamaserver` targets, one at a time. Stops between targets once
 * `signal` is aborted. Resolves with the targets that ran to the end.
 */
export async function runBatchConfig(
  config: BatchConfig,
  io: EvalIo,
  options: BatchRunOptions = {},
): Promise<number> {
  let finished = 0;
  const planned = plannedRunsPerTarget(config);
  mkdirSync(dirname(config.out), { recursive: true });
  appendPlan(config.out, { kind: "batch", targets: config.targets.length, plannedPerTarget: planned });
  // An overall bar beside the targets' bars, unless progress is off or the caller brings its own.
  const overall =
    options.progress !== false && !io.progress ? createBatchProgress(planned * config.targets.length) : null;
  try {
    for (const [index, target] of config.targets.entries()) {
      if (options.signal?.aborted) break;
      const targetIo = overall
        ? {
            ...io,
            stderr: overall.log,
            progress: overall.forTarget(`${index + 1} ${describeTarget(target)}`, planned),
          }
        : io;
      await runTarget(config, target, index, targetIo, options);
      if (!options.signal?.aborted) finished += 1;
    }
  } finally {
    overall?.stop();
  }
  return finished;
}

/** Runs each target plans: scenarios × configs × runs (the same for every target). */
export function plannedRunsPerTarget(config: BatchConfig): number {
  const scenarios = selectScenarios(config.scenarios, config.tags).length;
  return scenarios * resolveConfigs(config.ablation, { peer: false }).length * config.runs;
}

async function runTarget(
  config: BatchConfig,
  target: BatchTarget,
  index: number,
  io: EvalIo,
  options: BatchRunOptions,
): Promise<void> {
  io.stderr(`batch: target ${index + 1}/${config.targets.length}: ${describeTarget(target)}\n`);
  const common = {
    runs: config.runs,
    scenario: config.scenarios,
    tags: config.tags,
    ablation: config.ablation,
    seed: config.seed,
    out: config.out,
    resume: existsSync(config.out),
    report: false,
    progress: options.progress ?? true,
  };
  if (target.backend !== "llamaserver") {
    const { backend, ...rest } = target;
    await runEval({ ...common, backend, ...rest }, io, options.signal);
  } else {
    const { backend: _backend, gguf, launch, model, budget, budgetTokens, ...rest } = target;
    const modelName = model ?? ggufStem(gguf);
    if (allRunsDone(config, modelName, rest)) {
      // Nothing to run: llama-server is not started; the target still counts in plan and progress.
      const tasks = targetTasks(config, modelName, rest);
      appendPlan(config.out, {
        kind: "target",
        target: targetName(tasks.identity),
        configs: keysByConfig(tasks.tasks),
      });
      io.progress?.start(0);
      io.progress?.stop();
      io.stderr(`batch: all ${tasks.tasks.length} runs already in ${config.out}; llama-server not started\n`);
      return;
    }
    const budgetMode = budget ?? BudgetMode.BACKEND;
    const manager =
      options.createServerManager?.() ??
      new ServerManager({ backend: "llamaserver", logger: (line) => io.stderr(`batch: ${line}\n`) });
    try {
      const { budgetTokens: resolved } = await setupBackend({
        backend: "llamaserver",
        server: manager,
        ggufPath: gguf,
        launch,
        budgetMode,
        ...(budgetTokens !== undefined && { manualTokens: budgetTokens }),
        logger: (line) => io.stderr(`batch: ${line}\n`),
      });
      const info = manager.info;
      if (!info) throw new Error("llama-server is not running after setupBackend");
      const contextTokens = info.props?.nCtx ?? resolved;
      io.stderr(
        `batch: llama-server ${info.baseUrl} (pid ${info.pid}) runs ${gguf}, budget ${budgetMode}, n_ctx ${contextTokens}\n`,
      );
      await runEval(
        {
          ...common,
          backend: "openai-compatible",
          baseUrl: `${info.baseUrl}/v1`,
          model: modelName,
          ...rest,
          managedServer: { managedServer: "llamaserver", budgetMode, contextTokens },
        },
        io,
        options.signal,
      );
    } finally {
      await manager.stop();
      io.stderr("batch: llama-server stopped\n");
    }
  }
}

/** The tasks a `llamaserver` target plans (its rows are `openai-compatible` rows of `model`). */
function targetTasks(
  config: BatchConfig,
  model: string,
  variant: { toolMode?: string | undefined; think?: string | undefined },
): { identity: BatchIdentity; tasks: RunTask[] } {
  const identity: BatchIdentity = {
    backend: "openai-compatible",
    model,
    baseSeed: config.seed,
    stream: false,
    ...((variant.toolMode || variant.think) && {
      variant: {
        ...(variant.toolMode && { toolMode: variant.toolMode }),
        ...(variant.think && { think: variant.think }),
      },
    }),
  };
  const scenarios = selectScenarios(config.scenarios, config.tags);
  const configs = resolveConfigs(config.ablation, { peer: false });
  return { identity, tasks: planTasks(identity, scenarios, configs, config.runs) };
}

/** Whether `config.out` already holds every run of this `llamaserver` target. */
function allRunsDone(
  config: BatchConfig,
  model: string,
  variant: { toolMode?: string | undefined; think?: string | undefined },
): boolean {
  if (!existsSync(config.out)) return false;
  const done = new Set(readJsonl(config.out, runRowSchema).rows.map((row) => row.key));
  return targetTasks(config, model, variant).tasks.every((task) => done.has(task.key));
}
