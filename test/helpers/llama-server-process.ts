/** A real llama-server on 127.0.0.1 running the tiny test model (or a given GGUF), for integration tests and benchmarks. */
import { readFileSync } from "node:fs";
import { ServerManager } from "../../src/server/server-manager.ts";
import { ensureLlamaServer, ensureTestModel } from "./test-model.ts";

/** How many of llama-server's last output lines a failure message carries. */
const LOG_LINES_KEPT = 200;

/** Options of {@link startTestLlamaServer}; the defaults match the smoke test's flags. */
export interface TestLlamaServerOptions {
  /** Context size (`-c`). Default 2048. */
  ctx?: number;
  /** Parallel slots (`-np`). Default 1. */
  slots?: number;
  /** CPU threads (`-t`). Default 2. */
  threads?: number;
  /** The GGUF file to run. Default: the tiny random test model (built or generated when missing). */
  modelPath?: string;
  /** More llama-server flags, after `--no-webui`. */
  extraFlags?: string[];
  /** How long loading may take before `/health` answers 200. Default: `ServerManager`'s (60 s). */
  startTimeoutMs?: number;
}

/** A running llama-server and the way to get rid of it. */
export interface TestLlamaServer {
  /** `http://127.0.0.1:<port>`, without `/v1`. */
  baseUrl: string;
  /** The GGUF file it runs. */
  modelPath: string;
  pid: number;
  manager: ServerManager;
  /** The last lines llama-server and the manager printed, for failure messages. */
  log(): string;
  /** Stop it (SIGTERM, then SIGKILL); safe to call twice, and after a failed start. */
  stop(): Promise<void>;
}

/**
 * Start llama-server through `ServerManager` with the tiny test model (built or generated when
 * missing, so give the calling hook a long timeout). The process is also killed when this Node
 * process exits, so a crashed test run leaves nothing behind; call `stop()` in `afterAll`.
 * @example
 * let server: TestLlamaServer | undefined;
 * beforeAll(async () => { server = await startTestLlamaServer(); }, 900_000);
 * afterAll(() => server?.stop());
 */
export async function startTestLlamaServer(options: TestLlamaServerOptions = {}): Promise<TestLlamaServer> {
  const [binaryPath, modelPath] = await Promise.all([
    ensureLlamaServer(),
    options.modelPath ?? ensureTestModel(),
  ]);
  const lines: string[] = [];
  const keep = (line: string): void => {
    lines.push(line);
    if (lines.length > LOG_LINES_KEPT) lines.shift();
  };
  const manager = new ServerManager({
    backend: "llamaserver",
    host: "127.0.0.1",
    binaryPath,
    logger: (line) => keep(`[server-manager] ${line}`),
    onServerLine: keep,
    stopTimeoutMs: 3_000,
    ...(options.startTimeoutMs === undefined ? {} : { startTimeoutMs: options.startTimeoutMs }),
  });
  // The pid of the process the manager runs now; cleared once it is known to be gone.
  const pids = new Set<number>();
  manager.on("server.ready", (info) => {
    if (info.pid) pids.add(info.pid);
  });
  manager.on("server.crashed", () => pids.clear());
  manager.on("server.stopped", () => pids.clear());
  const killLeftovers = (): void => {
    for (const pid of pids) killIfLlamaServer(pid);
    pids.clear();
  };
  process.once("exit", killLeftovers);
  const stop = async (): Promise<void> => {
    await manager.stop().catch(() => undefined);
    killLeftovers();
    process.removeListener("exit", killLeftovers);
  };
  const log = (): string => lines.join("\n");
  try {
    const info = await manager.start({
      ggufPath: modelPath,
      ctx: options.ctx ?? 2048,
      slots: options.slots ?? 1,
      threads: options.threads ?? 2,
      extraFlags: ["--no-webui", ...(options.extraFlags ?? [])],
    });
    if (info.pid === null) throw new Error("ServerManager reported no pid for llama-server");
    return { baseUrl: info.baseUrl, modelPath, pid: info.pid, manager, log, stop };
  } catch (error) {
    await stop();
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`llama-server did not start: ${reason}\n${log()}`, { cause: error });
  }
}

/** SIGKILL `pid` only while it is still a llama-server, so a recycled pid is never hit. */
function killIfLlamaServer(pid: number): void {
  try {
    const argv0 = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0] ?? "";
    if (!argv0.endsWith("llama-server")) return;
    process.kill(pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}
