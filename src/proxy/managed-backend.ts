/**
 * Managed mode (`--backend llamaserver --gguf`): the proxy starts llama-server through the
 * ServerManager actor, reports its lifecycle in `/forge/health`, and stops it when the proxy closes.
 */

import type { LaunchOptions } from "../server/launch-config.ts";
import { ServerManager, type ServerManagerOptions } from "../server/server-manager.ts";
import type { ProxyBackend } from "./backend.ts";
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
  /** Passed to the ServerManager (binary path, logger, start timeout, …). */
  manager?: Omit<ServerManagerOptions, "backend" | "port" | "host">;
}

/**
 * Start llama-server for `launch.ggufPath` and return it as the proxy's backend. Resolves once it
 * is healthy; `close()` stops it (SIGTERM, then SIGKILL).
 * @example
 * const backend = await startManagedBackend({ launch: { ggufPath: "models/qwen3-8b.gguf", ctx: 8192 } });
 * const proxy = await startProxy({ backend }); // proxy.close() stops llama-server too
 */
export async function startManagedBackend(options: ManagedBackendOptions): Promise<ProxyBackend> {
  const manager = new ServerManager({
    ...options.manager,
    backend: "llamaserver",
    host: "127.0.0.1",
    ...(options.port !== undefined && { port: options.port }),
  });
  let info: Awaited<ReturnType<ServerManager["start"]>>;
  try {
    info = await manager.start(options.launch);
  } catch (error) {
    await manager.stop().catch(() => {});
    throw error;
  }
  return createHttpBackend({
    url: info.baseUrl,
    format: "openai",
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
      lastError: manager.lastError?.message ?? null,
    }),
    close: () => manager.stop(),
  });
}
