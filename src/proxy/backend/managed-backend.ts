/**
 * Managed mode (`--backend llamaserver --gguf`): the proxy starts llama-server through the
 * ServerManager actor with a random API key only the proxy knows, supervises it (restart after a
 * crash or a failed liveness probe, within limits), reports its lifecycle in `/forge/health`, and
 * stops it when the proxy closes. While it is not serving, requests get 503 saying why.
 */

import { randomBytes } from "node:crypto";
import type { LaunchOptions } from "../../server/launch-config.ts";
import { ServerManager, type ServerManagerOptions } from "../../server/server-manager.ts";
import type { SupervisionOptions } from "../../server/supervision.ts";
import { ProxyErrorKind, ProxyHttpError } from "../errors.ts";
import type { ForwardRequest, ProxyBackend } from "./backend.ts";
import type { ProxyToolMode } from "./forwarding-client.ts";
import { createHttpBackend } from "./http-backend.ts";

/** Options of `startManagedBackend`. */
export interface ManagedBackendOptions {
  /** How llama-server is launched (`ggufPath`, `ctx`, `slots`, …). */
  launch: LaunchOptions & { ggufPath: string };
  /** llama-server's port on 127.0.0.1; unset picks a free one. */
  port?: number;
  /** Silence allowed from llama-server before a request fails with 504. */
  timeoutMs?: number;
  /** Longest silence between two reads of an answer's body (see `HttpBackendOptions`). */
  idleTimeoutMs?: number;
  /** Largest answer from llama-server in bytes (see `HttpBackendOptions`). */
  maxResponseBytes?: number;
  toolMode?: ProxyToolMode;
  defaultModel?: string;
  /** Restart limits and liveness probe (default: `DEFAULT_SUPERVISION`). */
  supervision?: SupervisionOptions;
  /** Passed to the ServerManager (binary path, logger, start timeout, …). */
  manager?: Omit<ServerManagerOptions, "backend" | "port" | "host" | "apiKey" | "supervision">;
}

/**
 * Start llama-server for `launch.ggufPath` and return it as the proxy's backend. Resolves once it
 * is healthy; `close()` stops it (SIGTERM, then SIGKILL). llama-server gets a fresh random API key
 * (so its port answers nobody but the proxy, except `/health`); on Linux it dies with the proxy.
 * @example
 * const backend = await startManagedBackend({ launch: { ggufPath: "models/qwen3-8b.gguf", ctx: 8192 } });
 * const proxy = await startProxy({ backend }); // proxy.close() stops llama-server too
 */
export async function startManagedBackend(options: ManagedBackendOptions): Promise<ProxyBackend> {
  const apiKey = randomBytes(32).toString("base64url");
  const manager = new ServerManager({
    ...options.manager,
    backend: "llamaserver",
    host: "127.0.0.1",
    ...(options.port !== undefined && { port: options.port }),
    apiKey,
    supervision: options.supervision ?? {},
  });
  let info: Awaited<ReturnType<ServerManager["start"]>>;
  try {
    info = await manager.start(options.launch);
  } catch (error) {
    await manager.stop().catch(() => {});
    throw error;
  }
  const connect = (url: string) =>
    createHttpBackend({
      url,
      format: "openai",
      apiKey,
      ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
      ...(options.idleTimeoutMs !== undefined && { idleTimeoutMs: options.idleTimeoutMs }),
      ...(options.maxResponseBytes !== undefined && { maxResponseBytes: options.maxResponseBytes }),
      ...(options.toolMode && { toolMode: options.toolMode }),
      ...(options.defaultModel && { defaultModel: options.defaultModel }),
      detail: () => ({
        managed: true,
        status: manager.status,
        pid: manager.info?.pid ?? null,
        gguf: options.launch.ggufPath,
        nCtx: manager.info?.props?.nCtx ?? null,
        restarts: manager.restarts,
        lastError: manager.lastError?.message ?? null,
      }),
    });
  // A restart keeps the port while it is free; if it had to move, later requests follow it.
  let current = connect(info.baseUrl);
  let currentUrl = info.baseUrl;
  manager.on("server.ready", (ready) => {
    if (ready.baseUrl === currentUrl) return;
    void current.close?.();
    current = connect(ready.baseUrl);
    currentUrl = ready.baseUrl;
  });
  return {
    format: "openai",
    get url() {
      return current.url;
    },
    client(call) {
      assertServing(manager);
      return current.client(call);
    },
    forward(request: ForwardRequest) {
      assertServing(manager);
      return current.forward(request);
    },
    contextLength: () => current.contextLength(),
    tokenizer: () => current.tokenizer?.(),
    chatTemplate: async () => manager.info?.props?.chatTemplate ?? (await current.chatTemplate?.()) ?? null,
    health: () => current.health(),
    async close() {
      await current.close?.();
      await manager.stop();
    },
  };
}

/** Refuse a request with 503 while llama-server is not serving, saying why and when to retry. */
function assertServing(manager: ServerManager): void {
  const status = manager.status;
  if (status === "healthy") return;
  const why = manager.lastError?.message.split("\n")[0];
  const recovering = status === "starting" || status === "restarting" || status === "unhealthy";
  throw new ProxyHttpError(
    503,
    ProxyErrorKind.OVERLOADED,
    recovering
      ? `The managed llama-server is ${status === "unhealthy" ? "unhealthy and being restarted" : "restarting"}${why ? ` (${why})` : ""}; retry shortly.`
      : `The managed llama-server is ${status}${why ? `: ${why}` : ""}. Restart the proxy once the cause is fixed.`,
    recovering ? { retryAfterSeconds: 5 } : {},
  );
}
