/**
 * The agent task suite's runs: each task, for each agent and arm, in a fresh repository. The
 * `direct` arm points the agent (by its `forge launch` recipe, so both arms configure it the same
 * way) at the model server itself; the `proxy` arm runs it through `forge launch <agent>` with the
 * default guardrails, and reads what they did from the proxy's JSON access log. A run past its cap
 * has its process group killed. Each run is graded and appended as one JSONL row as soon as it
 * ends, so `--resume` skips the runs a file already holds; runs go one at a time (one slot).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import cliProgress from "cli-progress";
import { z } from "zod";
import { agentsBinDir } from "../../scripts/setup-agents.ts";
import { type AgentRecipe, opencodeRecipe, piRecipe, qwenRecipe } from "../../src/cli/launch/agents.ts";
import { agentEnv } from "../../src/cli/launch/launch.ts";
import { appendJsonLine, latestByKey, readJsonl, repairTail } from "../batch/jsonl.ts";
import type { RequestCounter } from "./request-counter.ts";
import { AgentSuiteUsageError, type AgentTask } from "./tasks.ts";
import { agentBaseEnv, changesOf, createWorkspace, type Workspace } from "./workspace.ts";

const FORGE = fileURLToPath(new URL("../../scripts/forge.ts", import.meta.url));
/** tsx's loader by absolute URL: forge runs in the task's repository, where `tsx` would not resolve. */
const TSX = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;

/** How an agent is run non-interactively, with tool calls approved. */
export interface AgentDriver {
  recipe: AgentRecipe;
  args(prompt: string): string[];
}

/** The agents the suite can drive (all speak chat completions). */
export const AGENT_DRIVERS: Readonly<Record<string, AgentDriver>> = {
  pi: { recipe: piRecipe, args: (prompt) => ["-p", prompt] },
  opencode: { recipe: opencodeRecipe, args: (prompt) => ["run", prompt] },
  qwen: { recipe: qwenRecipe, args: (prompt) => ["-p", prompt, "--yolo"] },
};

/** The two arms. */
export const AGENT_ARMS = ["direct", "proxy"] as const;
export type AgentArm = (typeof AGENT_ARMS)[number];

/** One run, as a results line. */
export const agentRowSchema = z.object({
  /** `${model}|${agent}|${arm}|${task}`. */
  key: z.string(),
  task: z.string(),
  agent: z.string(),
  model: z.string(),
  arm: z.enum(AGENT_ARMS),
  passed: z.boolean(),
  /** The grader's line. */
  detail: z.string(),
  /**
   * LLM requests of the agent answered in full (by the server directly, or by the proxy as its
   * access log shows); a request cut off at the cap is not counted.
   */
  turns: z.number(),
  /** LLM requests the model server received (the proxy's nudged retries included). */
  backendCalls: z.number(),
  /** Requests where the call-loop guard stepped in, by what it did. */
  loopNotes: z.number(),
  loopNarrows: z.number(),
  loopStops: z.number(),
  denied: z.number(),
  renamed: z.number(),
  prose: z.number(),
  nudges: z.number(),
  rescues: z.number(),
  degenerate: z.number(),
  /** Proxy answers that were not 200. */
  proxyErrors: z.number(),
  wallMs: z.number(),
  /** `exit` (see exitCode), `timeout` (killed at the cap), `signal` or `spawn_error`. */
  exitReason: z.enum(["exit", "timeout", "signal", "spawn_error"]),
  exitCode: z.number().nullable(),
  /** The end of the agent's stdout and stderr, for reading a failure. */
  answerTail: z.string(),
  stderrTail: z.string(),
  at: z.string(),
});
export type AgentRow = z.infer<typeof agentRowSchema>;

/** The key of a run's row. */
export function agentRowKey(model: string, agent: string, arm: string, task: string): string {
  return `${model}|${agent}|${arm}|${task}`;
}

/** The guardrail counts of a proxy's JSON access log (other lines are forge's messages). */
export interface ProxyLogCounts {
  turns: number;
  loopNotes: number;
  loopNarrows: number;
  loopStops: number;
  denied: number;
  renamed: number;
  prose: number;
  nudges: number;
  rescues: number;
  degenerate: number;
  proxyErrors: number;
}

const accessLineSchema = z.object({
  path: z.string(),
  status: z.number(),
  nudges: z.number().default(0),
  rescues: z.number().default(0),
  prose: z.number().default(0),
  renamed: z.number().default(0),
  loop_guard: z.enum(["note", "narrow", "stop"]).nullable().default(null),
  denied: z.number().default(0),
  degenerate: z.number().default(0),
});

/** Count what the access log `text` (`--log-format json`) shows on the LLM routes. */
export function countProxyLog(text: string): ProxyLogCounts {
  const counts: ProxyLogCounts = {
    turns: 0,
    loopNotes: 0,
    loopNarrows: 0,
    loopStops: 0,
    denied: 0,
    renamed: 0,
    prose: 0,
    nudges: 0,
    rescues: 0,
    degenerate: 0,
    proxyErrors: 0,
  };
  for (const line of text.split("\n")) {
    if (!line.startsWith("{")) continue;
    const parsed = accessLineSchema.safeParse(JSON.parse(line));
    if (!parsed.success) continue;
    const record = parsed.data;
    if (!/\/(chat\/completions|messages|responses)$/.test(record.path)) continue;
    counts.turns += 1;
    if (record.status !== 200) counts.proxyErrors += 1;
    if (record.loop_guard === "note") counts.loopNotes += 1;
    if (record.loop_guard === "narrow") counts.loopNarrows += 1;
    if (record.loop_guard === "stop") counts.loopStops += 1;
    counts.denied += record.denied;
    counts.renamed += record.renamed;
    counts.prose += record.prose;
    counts.nudges += record.nudges;
    counts.rescues += record.rescues;
    counts.degenerate += record.degenerate;
  }
  return counts;
}

/** How a spawned agent ended. */
interface ProcessEnd {
  reason: AgentRow["exitReason"];
  code: number | null;
  stdout: string;
  stderr: string;
}

const KEPT_OUTPUT = 64 * 1024;

/** Run `file args` in its own process group, killed whole after `capMs` (and after it exits). */
function runProcess(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, capMs: number) {
  return new Promise<ProcessEnd>((resolve) => {
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    let child: ChildProcess;
    try {
      child = spawn(file, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    } catch (error) {
      resolve({ reason: "spawn_error", code: null, stdout, stderr: String(error) });
      return;
    }
    const keep = (sofar: string, chunk: unknown) => (sofar + String(chunk)).slice(-KEPT_OUTPUT);
    child.stdout?.on("data", (chunk) => {
      stdout = keep(stdout, chunk);
    });
    child.stderr?.on("data", (chunk) => {
      stderr = keep(stderr, chunk);
    });
    const killGroup = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        // The group is gone already.
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, capMs);
    child.once("error", (error) => {
      clearTimeout(timer);
      resolve({ reason: "spawn_error", code: null, stdout, stderr: `${stderr}${String(error)}` });
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      // A shell or server the agent left running goes with the group.
      killGroup();
      const reason = timedOut ? "timeout" : signal !== null ? "signal" : "exit";
      resolve({ reason, code, stdout, stderr });
    });
  });
}

/** One run's settings. */
export interface AgentRunSpec {
  task: AgentTask;
  agent: string;
  arm: AgentArm;
  /** The model name sent and recorded. */
  model: string;
  /** The request counter in front of the model server. */
  counter: RequestCounter;
  /** The wall-time cap of one run. */
  capMs: number;
  /** Where to keep the proxy arm's access log, as `<logName>.log`. */
  logDir?: string | undefined;
  logName?: string | undefined;
}

/** Run one task once and grade it; the row (not yet written). */
export async function runAgentTask(spec: AgentRunSpec): Promise<AgentRow> {
  const driver = AGENT_DRIVERS[spec.agent];
  if (!driver)
    throw new AgentSuiteUsageError(
      `unknown agent ${spec.agent}: use ${Object.keys(AGENT_DRIVERS).join(", ")}`,
    );
  const workspace = await createWorkspace(spec.task.files);
  try {
    spec.counter.reset();
    const started = performance.now();
    const logFile = join(workspace.scratch, "proxy.log");
    const end =
      spec.arm === "direct"
        ? await runDirect(driver, spec, workspace)
        : await runThroughProxy(driver, spec, workspace, logFile);
    const wallMs = performance.now() - started;
    const backendCalls = spec.counter.posts();
    const answer = end.stdout;
    const changes = await changesOf(workspace.repo);
    const verdict = await spec.task.grade({ dir: workspace.repo, answer, changes });
    const counts =
      spec.arm === "proxy"
        ? countProxyLog(existsSync(logFile) ? readFileSync(logFile, "utf8") : "")
        : { ...countProxyLog(""), turns: spec.counter.answered() };
    if (spec.logDir !== undefined && existsSync(logFile)) {
      mkdirSync(spec.logDir, { recursive: true });
      copyFileSync(logFile, join(spec.logDir, `${spec.logName ?? spec.task.id}.log`));
    }
    return {
      key: agentRowKey(spec.model, spec.agent, spec.arm, spec.task.id),
      task: spec.task.id,
      agent: spec.agent,
      model: spec.model,
      arm: spec.arm,
      passed: verdict.passed,
      detail: verdict.detail,
      ...counts,
      backendCalls,
      wallMs,
      exitReason: end.reason,
      exitCode: end.code,
      answerTail: answer.slice(-600),
      stderrTail: end.stderr.slice(-600),
      at: new Date().toISOString(),
    };
  } finally {
    workspace.remove();
  }
}

/** The direct arm: the recipe's config, pointed at the model server (through the counter). */
async function runDirect(driver: AgentDriver, spec: AgentRunSpec, workspace: Workspace): Promise<ProcessEnd> {
  const configDir = join(workspace.scratch, "config");
  mkdirSync(configDir, { mode: 0o700 });
  const plan = driver.recipe.plan({
    proxyUrl: spec.counter.url,
    apiKey: "forge-bench-direct",
    model: spec.model,
    configDir,
  });
  for (const [relative, content] of Object.entries(plan.files)) {
    mkdirSync(dirname(join(configDir, relative)), { recursive: true });
    writeFileSync(join(configDir, relative), content, { mode: 0o600 });
  }
  const env = agentEnv(plan, agentBaseEnv(workspace, agentsBinDir()));
  const args = [...plan.args, ...driver.args(spec.task.prompt)];
  return runProcess(driver.recipe.binary, args, workspace.repo, env, spec.capMs);
}

/** The proxy arm: `forge launch <agent>` from the sources, default guardrails, JSON access log. */
function runThroughProxy(
  driver: AgentDriver,
  spec: AgentRunSpec,
  workspace: Workspace,
  logFile: string,
): Promise<ProcessEnd> {
  const args = [
    "--import",
    TSX,
    FORGE,
    "launch",
    driver.recipe.name,
    "--backend-url",
    `${spec.counter.url}/v1`,
    "--model",
    spec.model,
    "--log-file",
    logFile,
    "--log-format",
    "json",
    "--",
    ...driver.args(spec.task.prompt),
  ];
  const env = agentBaseEnv(workspace, agentsBinDir());
  return runProcess(process.execPath, args, workspace.repo, env, spec.capMs);
}

/** Options of {@link runAgentSuite}. */
export interface AgentSuiteOptions {
  tasks: readonly AgentTask[];
  agents: readonly string[];
  arms: readonly AgentArm[];
  model: string;
  counter: RequestCounter;
  capMs: number;
  out: string;
  resume: boolean;
  /** Where to keep each proxy run's access log (default: `<out>.logs`). */
  logDir?: string | undefined;
  /** Repeats of each run (rows keyed `…#2`, `…#3` past the first). */
  repeats?: number;
  progress?: boolean;
  /** Told of each row as it is written. */
  onRow?: (row: AgentRow) => void;
}

/**
 * Run every task for every agent and arm, appending each row; returns the rows written.
 */
export async function runAgentSuite(options: AgentSuiteOptions): Promise<AgentRow[]> {
  for (const agent of options.agents) {
    if (!AGENT_DRIVERS[agent])
      throw new AgentSuiteUsageError(`unknown agent ${agent}: use ${Object.keys(AGENT_DRIVERS).join(", ")}`);
  }
  mkdirSync(dirname(options.out), { recursive: true });
  let done = new Set<string>();
  if (options.resume && existsSync(options.out)) {
    repairTail(options.out);
    done = new Set(latestByKey(readJsonl(options.out, agentRowSchema).rows).rows.map((row) => row.key));
  }
  const repeats = options.repeats ?? 1;
  const work: { task: AgentTask; agent: string; arm: AgentArm; key: string }[] = [];
  // An arm's tasks one after another: they share the agent's (and the proxy's) prompt prefix, which
  // the server's prompt cache then keeps; alternating arms would evaluate it afresh each run.
  for (let repeat = 1; repeat <= repeats; repeat += 1)
    for (const agent of options.agents)
      for (const arm of options.arms)
        for (const task of options.tasks) {
          const base = agentRowKey(options.model, agent, arm, task.id);
          const key = repeat === 1 ? base : `${base}#${repeat}`;
          if (!done.has(key)) work.push({ task, agent, arm, key });
        }
  const bar = options.progress
    ? new cliProgress.SingleBar(
        {
          format:
            "agents {bar} {value}/{total} {passed} passed | {run} | elapsed {duration_formatted} eta {eta_formatted}",
          hideCursor: true,
          etaBuffer: 8,
        },
        cliProgress.Presets.shades_classic,
      )
    : undefined;
  bar?.start(work.length, 0, { passed: 0, run: "" });
  const written: AgentRow[] = [];
  try {
    for (const item of work) {
      bar?.update(written.length, { run: `${item.agent} ${item.arm} ${item.task.id}` });
      const row = await runAgentTask({
        task: item.task,
        agent: item.agent,
        arm: item.arm,
        model: options.model,
        counter: options.counter,
        capMs: options.capMs,
        logDir: options.logDir ?? `${options.out}.logs`,
        logName: item.key.replaceAll("|", "_").replaceAll("#", "_"),
      });
      const keyed = { ...row, key: item.key };
      appendJsonLine(options.out, keyed);
      written.push(keyed);
      options.onRow?.(keyed);
      bar?.update(written.length, { passed: written.filter((entry) => entry.passed).length });
    }
  } finally {
    bar?.stop();
  }
  return written;
}
