/**
 * Managed mode (`--backend llamaserver --gguf`): the proxy starts llama-server through the
 * ServerManager actor and stops it when the proxy closes.
 *
 * TODO(managed-mode): the ServerManager (`machines/server-manager.machine.ts`, `src/server/`) is
 * not in this checkout yet. When it lands, start it here, wait for it to be ready, and return
 * `createHttpBackend({ url, format: "openai", …, detail: () => state, close: () => stop })`.
 */
import type { ProxyBackend } from "./backend.ts";
import type { ProxyToolMode } from "./forwarding-client.ts";

/** Options of `startManagedBackend`. */
export interface ManagedBackendOptions {
  ggufPath: string;
  /** Port llama-server listens on (127.0.0.1). */
  port: number;
  timeoutMs: number;
  toolMode?: ProxyToolMode;
  defaultModel?: string;
}

/** Raised when managed mode cannot run. */
export class ManagedBackendUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ManagedBackendUnavailableError";
  }
}

/** Start llama-server for `ggufPath` and return it as the proxy's backend. */
export async function startManagedBackend(options: ManagedBackendOptions): Promise<ProxyBackend> {
  throw new ManagedBackendUnavailableError(
    `Managed mode (--backend llamaserver --gguf ${options.ggufPath}) needs the ServerManager, which this build does not have yet. Start llama-server yourself and use --backend-url http://127.0.0.1:${options.port}.`,
  );
}
