/**
 * Running the agent of `forge launch`: find its binary before anything starts, run it with the
 * terminal (stdio inherited), pass on the signals forge receives, and turn how it ended into an
 * exit status.
 */
import { accessSync, constants as fsConstants, statSync } from "node:fs";
import { constants as osConstants } from "node:os";
import { delimiter, isAbsolute, join, resolve } from "node:path";

/** What `findExecutable` found. */
export type ExecutableLookup = "found" | "missing" | "not_executable";

/**
 * Whether `file` can be run with `env`'s `PATH`: a name with a slash is a path; a bare name is
 * looked up in each `PATH` folder, as a shell does. On Windows, where `PATHEXT` and shims decide,
 * it answers `found` and leaves the verdict to the spawn.
 */
export function findExecutable(file: string, env: NodeJS.ProcessEnv): ExecutableLookup {
  if (process.platform === "win32") return "found";
  if (file.includes("/")) return checkFile(isAbsolute(file) ? file : resolve(file));
  let sawFile = false;
  for (const folder of (env.PATH ?? "").split(delimiter)) {
    const verdict = checkFile(join(folder === "" ? "." : folder, file));
    if (verdict === "found") return "found";
    if (verdict === "not_executable") sawFile = true;
  }
  return sawFile ? "not_executable" : "missing";
}

function checkFile(path: string): ExecutableLookup {
  try {
    if (!statSync(path).isFile()) return "missing";
  } catch {
    return "missing";
  }
  try {
    accessSync(path, fsConstants.X_OK);
    return "found";
  } catch {
    return "not_executable";
  }
}

/** How the agent ended. */
export type AgentEnd =
  | { kind: "exited"; exitCode: number }
  | { kind: "signaled"; signal: NodeJS.Signals }
  | { kind: "not_found" }
  | { kind: "not_executable" };

/** Exit status of a command that is not on `PATH`, as shells use it. */
export const NOT_FOUND_EXIT_CODE = 127;
/** Exit status of a command found but not runnable, as shells use it. */
export const NOT_EXECUTABLE_EXIT_CODE = 126;

/**
 * The status forge exits with: the agent's own code; 128 + the signal's number when a signal ended
 * it (what a shell reports); 127 when it is not installed, 126 when it cannot be run.
 */
export function exitStatusOf(end: AgentEnd): number {
  switch (end.kind) {
    case "exited":
      return end.exitCode;
    case "signaled":
      return 128 + (osConstants.signals[end.signal] ?? 0);
    case "not_found":
      return NOT_FOUND_EXIT_CODE;
    case "not_executable":
      return NOT_EXECUTABLE_EXIT_CODE;
  }
}

/** The signals forge passes on to the agent while it runs. */
export const FORWARDED_SIGNALS: readonly NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];

/** A command to run: the file, its arguments and its whole environment. */
export interface AgentCommand {
  file: string;
  args: readonly string[];
  env: NodeJS.ProcessEnv;
}

/**
 * Run `command` on the terminal (stdio inherited) until it ends. While it runs, SIGINT, SIGTERM and
 * SIGHUP sent to forge are sent on to it (forge itself keeps running, to clean up after it); it is
 * never killed for them, so an agent that asks before quitting still asks.
 */
export async function runAgent(command: AgentCommand): Promise<AgentEnd> {
  // Loaded on use: only `forge launch` runs a child this way.
  const { execa } = await import("execa");
  const child = execa(command.file, [...command.args], {
    stdio: "inherit",
    env: command.env,
    extendEnv: false,
    reject: false,
    forceKillAfterDelay: false,
  });
  const forward = (signal: NodeJS.Signals) => {
    child.kill(signal);
  };
  for (const signal of FORWARDED_SIGNALS) process.on(signal, forward);
  try {
    const result = await child;
    if (result.exitCode !== undefined) return { kind: "exited", exitCode: result.exitCode };
    if (result.signal !== undefined) return { kind: "signaled", signal: result.signal };
    if (result.code === "ENOENT") return { kind: "not_found" };
    if (result.code === "EACCES") return { kind: "not_executable" };
    throw new Error((result.message ?? "the agent could not be started").split("\n", 1)[0]);
  } finally {
    for (const signal of FORWARDED_SIGNALS) process.off(signal, forward);
  }
}
