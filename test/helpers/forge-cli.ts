/**
 * The `forge` command line from the sources (`scripts/forge.ts`, what `npm run forge` runs) as a
 * real child process, for tests that drive it as a user would; the compiled bin is
 * test/package's.
 */
import { type ChildProcessByStdio, spawn } from "node:child_process";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";

const FORGE = fileURLToPath(new URL("../../scripts/forge.ts", import.meta.url));

/** A `forge` child process: no stdin, stdout and stderr piped. */
export type ForgeChild = ChildProcessByStdio<null, Readable, Readable>;

/** A running `forge` process and what it has written so far. */
export interface ForgeProcess {
  child: ForgeChild;
  /** stdout and stderr interleaved as they arrived. */
  output: () => string;
  stdout: () => string;
  stderr: () => string;
}

/** Starts `forge <args>` under tsx; `env` replaces the environment (default: the test's). */
export function spawnForge(args: readonly string[], env?: NodeJS.ProcessEnv): ForgeProcess {
  const child = spawn(process.execPath, ["--import", "tsx", FORGE, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    ...(env !== undefined && { env }),
  });
  let output = "";
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => {
    stdout += String(chunk);
    output += String(chunk);
  });
  child.stderr.on("data", (chunk) => {
    stderr += String(chunk);
    output += String(chunk);
  });
  return { child, output: () => output, stdout: () => stdout, stderr: () => stderr };
}

/** The process's exit code (null when a signal ended it), now or when it exits. */
export function exitOf(child: ForgeChild): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

/** Waits until `output()` matches `pattern`; throws with the output so far after `timeoutMs`. */
export async function waitForOutput(
  output: () => string,
  pattern: RegExp,
  timeoutMs = 20_000,
): Promise<RegExpMatchArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = output().match(pattern);
    if (match) return match;
    if (Date.now() > deadline) throw new Error(`no ${pattern} in output:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Runs `forge <args>` to its end: its exit code, stdout and stderr. */
export async function runForge(
  args: readonly string[],
  env?: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const run = spawnForge(args, env);
  const code = await exitOf(run.child);
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}
