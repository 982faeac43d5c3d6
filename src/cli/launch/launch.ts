/**
 * One `forge launch` run: check the agent is installed, start the proxy on a free 127.0.0.1 port
 * (with the code `forge proxy` uses), point the agent at it for this run only (environment, and
 * config files in a temporary directory), run it, then stop the proxy (and a managed
 * llama-server) and remove the directory, however the agent ended.
 */
import { randomBytes } from "node:crypto";
import { createWriteStream, statSync, type WriteStream } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join } from "node:path";
import { format } from "node:util";
import type { RunningProxy } from "../../proxy/server.ts";
import { runProxy } from "../proxy-command.ts";
import type { ProxyCliOptions } from "../proxy-options.ts";
import { ExitStatusError } from "../run-program.ts";
import { type AgentRecipe, genericPlan, type LaunchContext, type LaunchPlan } from "./agents.ts";
import {
  exitStatusOf,
  FORWARDED_SIGNALS,
  findExecutable,
  NOT_EXECUTABLE_EXIT_CODE,
  NOT_FOUND_EXIT_CODE,
  runAgent,
} from "./run-agent.ts";

/** What to launch: a known agent, or any command (`forge launch -- <command>`). */
export type LaunchTarget = { kind: "agent"; recipe: AgentRecipe } | { kind: "command"; file: string };

/** A launch, as the command line describes it. */
export interface LaunchRequest {
  target: LaunchTarget;
  /** The user's arguments for the agent (after the recipe's own). */
  args: readonly string[];
  /** The proxy's options; `host` is always 127.0.0.1 and `port` 0 unless given. */
  proxy: ProxyCliOptions;
  /** Where the proxy's access log and messages go while the agent runs (default: nowhere). */
  logFile?: string | undefined;
}

/** The agent is not installed (exit 127) or cannot be run (126); the message says what to do. */
export class AgentNotFoundError extends ExitStatusError {
  override name = "AgentNotFoundError";
}

/** The model agents are told to use when `--model` is not given and the backend lists none. */
export const FALLBACK_MODEL = "local";

/**
 * Run `request` to its end and resolve with the status forge should exit with: the agent's own
 * exit code (128 + n when signal n ended it). Throws `AgentNotFoundError` before starting anything
 * when the agent is not installed, and the proxy's own errors (a taken `--port`, a missing
 * llama-server) as `forge proxy` does.
 */
export async function launch(request: LaunchRequest): Promise<number> {
  const file = request.target.kind === "agent" ? request.target.recipe.binary : request.target.file;
  checkInstalled(request.target, findExecutable(file, process.env));

  const log = request.logFile === undefined ? undefined : await openLog(request.logFile);
  // Until the agent runs, forge's lines go to stderr (stdout is the agent's); then only to the log.
  const restoreConsole = redirectConsole((line) => {
    process.stderr.write(`${line}\n`);
    log?.write(`${line}\n`);
  });
  const apiKey = request.proxy.apiKey ?? `forge-${randomBytes(24).toString("base64url")}`;
  let proxy: RunningProxy | undefined;
  let configDir: string | undefined;
  // A signal that comes while forge cleans up must not cut the clean-up short.
  const hold = () => {};
  try {
    proxy = await runProxy(
      { ...request.proxy, apiKey, host: "127.0.0.1", allowHost: [], quiet: log === undefined },
      {
        info: (line) => console.info(line),
        accessLog: (line) => log?.write(`${line}\n`),
      },
    );
    const model = request.proxy.model ?? (await firstModel(proxy.url, apiKey)) ?? FALLBACK_MODEL;
    configDir = await mkdtemp(join(configRoot(process.env), "forge-launch-"));
    const context: LaunchContext = { proxyUrl: proxy.url, apiKey, model, configDir };
    const plan = request.target.kind === "agent" ? request.target.recipe.plan(context) : genericPlan(context);
    await writePlanFiles(configDir, plan);
    const name = request.target.kind === "agent" ? request.target.recipe.title : file;
    console.info(
      `forge launch: ${name} → ${proxy.url} (model ${model})${request.logFile ? `; proxy log in ${request.logFile}` : ""}`,
    );
    redirectConsole((line) => log?.write(`${line}\n`));
    for (const signal of FORWARDED_SIGNALS) process.on(signal, hold);
    const end = await runAgent({ file, args: [...plan.args, ...request.args], env: agentEnv(plan) });
    if (end.kind === "not_found" || end.kind === "not_executable") checkInstalled(request.target, end.kind);
    return exitStatusOf(end);
  } finally {
    await proxy
      ?.close()
      .catch((error: unknown) =>
        process.stderr.write(`forge launch: stopping the proxy failed: ${String(error)}\n`),
      );
    if (configDir !== undefined) await rm(configDir, { recursive: true, force: true });
    restoreConsole();
    for (const signal of FORWARDED_SIGNALS) process.off(signal, hold);
    await new Promise<void>((resolve) => (log ? log.end(resolve) : resolve()));
  }
}

/**
 * The agent's environment: forge's own, with the plan's variables set and its removals removed,
 * and the loopback names added to `NO_PROXY` / `no_proxy`, so that an HTTP proxy the user set
 * (`HTTPS_PROXY`, …) is not asked for the forge proxy on 127.0.0.1.
 */
export function agentEnv(plan: LaunchPlan, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base, ...plan.env };
  for (const name of plan.unsetEnv) delete env[name];
  for (const name of ["NO_PROXY", "no_proxy"]) {
    const hosts = (env[name] ?? "").split(",").filter((host) => host.trim() !== "");
    for (const loopback of LOOPBACK_HOSTS) if (!hosts.includes(loopback)) hosts.push(loopback);
    env[name] = hosts.join(",");
  }
  return env;
}

const LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "::1"];

/**
 * Where the run's config directory is made: `$XDG_RUNTIME_DIR` (the user's own 0700 runtime folder)
 * when set, else the system's temporary folder. Codex refuses to install its helper commands
 * (`apply_patch` for the model's shell) under the temporary folder.
 */
export function configRoot(env: NodeJS.ProcessEnv): string {
  const runtime = env.XDG_RUNTIME_DIR;
  if (runtime !== undefined && isAbsolute(runtime) && isDirectory(runtime)) return runtime;
  return tmpdir();
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function checkInstalled(target: LaunchTarget, lookup: "found" | "missing" | "not_found" | "not_executable") {
  if (lookup === "found") return;
  const file = target.kind === "agent" ? target.recipe.binary : target.file;
  if (lookup === "not_executable") {
    throw new AgentNotFoundError(NOT_EXECUTABLE_EXIT_CODE, `${file} is not executable (chmod +x it).`);
  }
  throw new AgentNotFoundError(
    NOT_FOUND_EXIT_CODE,
    target.kind === "agent"
      ? `${target.recipe.title} (${file}) is not installed: npm install -g ${target.recipe.npmPackage}`
      : `${file}: command not found`,
  );
}

/** The first model the proxy lists (the backend's), so agents name one the backend serves. */
async function firstModel(proxyUrl: string, apiKey: string): Promise<string | undefined> {
  try {
    const response = await fetch(`${proxyUrl}/v1/models`, {
      headers: { authorization: `Bearer ${apiKey}` },
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok) return undefined;
    const body = (await response.json()) as { data?: { id?: unknown }[] };
    const id = body.data?.[0]?.id;
    return typeof id === "string" && id !== "" ? id : undefined;
  } catch {
    return undefined;
  }
}

async function writePlanFiles(configDir: string, plan: LaunchPlan): Promise<void> {
  for (const [relative, content] of Object.entries(plan.files)) {
    const path = join(configDir, relative);
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    await writeFile(path, content, { mode: 0o600 });
  }
}

async function openLog(path: string): Promise<WriteStream> {
  const stream = createWriteStream(path, { flags: "a", mode: 0o600 });
  await new Promise<void>((resolve, reject) => {
    stream.once("open", () => resolve());
    stream.once("error", reject);
  });
  return stream;
}

const CONSOLE_METHODS = ["log", "info", "warn", "error", "debug"] as const;

/**
 * Send what the proxy and the server manager print with `console` to `write` (they print with
 * `console`, and the agent owns the terminal); returns a function that puts `console` back as it
 * was before the first redirect.
 */
function redirectConsole(write: (line: string) => void): () => void {
  const saved = CONSOLE_METHODS.map((method) => [method, console[method]] as const);
  for (const method of CONSOLE_METHODS) {
    console[method] = (...args: unknown[]) => write(format(...args));
  }
  return () => {
    for (const [method, original] of saved) console[method] = original;
  };
}
