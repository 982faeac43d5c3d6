/** Helpers for tests that run real llama-server processes: find them by port, kill leftovers. */
import { readdirSync, readFileSync } from "node:fs";
import { ensureLlamaServer, ensureTestModel } from "../../helpers/test-model.ts";

/** The llama-server binary and the tiny test model, built or generated when missing. */
export async function llamaServerFixtures(): Promise<{ binaryPath: string; modelPath: string }> {
  const [binaryPath, modelPath] = await Promise.all([ensureLlamaServer(), ensureTestModel()]);
  return { binaryPath, modelPath };
}

/** Pids of the live llama-server processes started with `--port <port>` (read from /proc). */
export function llamaServerPidsOnPort(port: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
    } catch {
      continue;
    }
    const portIndex = argv.indexOf("--port");
    if (argv[0]?.endsWith("llama-server") && portIndex !== -1 && argv[portIndex + 1] === String(port)) {
      pids.push(Number(entry));
    }
  }
  return pids;
}

/** Whether a process with this pid exists (and is not a zombie). */
export function isAlive(pid: number): boolean {
  try {
    const state = /^State:\s+(\S)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return state !== undefined && state !== "Z";
  } catch {
    return false;
  }
}

/** Remembers every pid a test saw and SIGKILLs the ones still alive (for afterAll). */
export class PidReaper {
  readonly #pids = new Set<number>();

  add(pid: number | null | undefined): void {
    if (pid) this.#pids.add(pid);
  }

  killAll(): void {
    for (const pid of this.#pids) {
      if (!isAlive(pid)) continue;
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
  }
}

/** A logger that keeps every line. */
export function recordingLogger(): { lines: string[]; log: (line: string) => void } {
  const lines: string[] = [];
  return { lines, log: (line) => lines.push(line) };
}
