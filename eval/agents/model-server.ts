/**
 * The suite's model server: a llama-server it starts on the given GGUF (through `ServerManager`,
 * `--jinja`, one slot, a reply cap with `-n`), or one the user runs (`--base-url`), with the
 * request counter in front of it either way.
 */
import { basename } from "node:path";
import { resolveLlamaServerPath } from "../../src/server/llama-server-path.ts";
import { ServerManager } from "../../src/server/server-manager.ts";
import { type RequestCounter, startRequestCounter } from "./request-counter.ts";

/** How to reach (or start) the model server. */
export type ModelServerSpec =
  | { kind: "gguf"; path: string; ctx: number; threads: number; maxTokens: number }
  | { kind: "url"; origin: string };

/** A model server behind its counter. */
export interface SuiteModelServer {
  counter: RequestCounter;
  /** The model name the runs send and record. */
  model: string;
  close(): Promise<void>;
}

/** The model name for a GGUF path: its file name without `.gguf`. */
export function modelNameOf(path: string): string {
  return basename(path).replace(/\.gguf$/i, "");
}

/** Start (or reach) the server and its counter. */
export async function startSuiteModelServer(
  spec: ModelServerSpec,
  model?: string,
): Promise<SuiteModelServer> {
  if (spec.kind === "url") {
    const counter = await startRequestCounter(spec.origin);
    return { counter, model: model ?? "local", close: () => counter.close() };
  }
  const manager = new ServerManager({
    backend: "llamaserver",
    host: "127.0.0.1",
    binaryPath: resolveLlamaServerPath(),
    logger: () => {},
    // Loading takes seconds on an idle machine, minutes on a loaded shared one.
    startTimeoutMs: 300_000,
    stopTimeoutMs: 5_000,
  });
  const info = await manager.start({
    ggufPath: spec.path,
    ctx: spec.ctx,
    slots: 1,
    threads: spec.threads,
    extraFlags: ["--no-webui", "-n", String(spec.maxTokens)],
  });
  const counter = await startRequestCounter(info.baseUrl);
  return {
    counter,
    model: model ?? modelNameOf(spec.path),
    close: async () => {
      await counter.close();
      await manager.stop();
    },
  };
}
