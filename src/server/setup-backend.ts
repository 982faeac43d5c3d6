/** One-call setup: start (or attach to) the backend, resolve the budget, build the ContextManager. */
import type { CompactStrategy } from "../context/compact-strategy.ts";
import { ContextManager } from "../context/context-manager.ts";
import { TieredCompact } from "../context/tiered-compact.ts";
import { checkManualTokens, contextFlagForSlot } from "./budget.ts";
import { BudgetMode } from "./budget-mode.ts";
import type { HardwareProfile } from "./hardware.ts";
import type { LaunchOptions } from "./launch-config.ts";
import { defaultServerLogger } from "./logger.ts";
import { ServerManager, type ServerManagerOptions } from "./server-manager.ts";

/** A client whose context size can be set per request (`OllamaClient`). */
export interface NumCtxClient {
  setNumCtx(numCtx: number | null): void;
}

/** Options of {@link setupBackend}. */
export interface SetupBackendOptions extends Omit<ServerManagerOptions, "backend"> {
  backend: ServerManagerOptions["backend"];
  /** The GGUF file (llama-server). */
  ggufPath?: string;
  /** Ollama's model name; for llama-server, the alias it serves under. */
  model?: string;
  /** Default `backend`. */
  budgetMode?: BudgetMode;
  /** The budget for `manual`. */
  manualTokens?: number;
  /** Default `new TieredCompact()`. */
  strategy?: CompactStrategy;
  compactThreshold?: number;
  /** Everything else llama-server is started with (slots, KV-cache types, GPU layers, …). */
  launch?: Omit<LaunchOptions, "ggufPath" | "model">;
  /** For Ollama: receives the budget as `num_ctx` (except in `backend` mode, which sends none). */
  client?: NumCtxClient;
  /** An existing manager to use instead of a new one. */
  server?: ServerManager;
}

/** What {@link setupBackend} returns. */
export interface BackendSetup {
  server: ServerManager;
  contextManager: ContextManager;
  budgetTokens: number;
  hardware: HardwareProfile | null;
}

/**
 * Start the backend and wire a `ContextManager` to its budget. llama-server is started without
 * `-c` for `forge-full` / `forge-fast` (so it sizes the context itself; forge-fast then restarts
 * it with half), with `-c` = the budget for `manual`, and as configured for `backend`. For
 * Ollama nothing is spawned and the client gets `setNumCtx(budget)`. If anything after the start
 * fails, a server this call started is stopped again.
 * @example
 * const { server, contextManager } = await setupBackend({
 *   backend: "llamaserver", ggufPath: "model.gguf", budgetMode: BudgetMode.FORGE_FAST,
 *   launch: { cacheTypeK: "q8_0", cacheTypeV: "q8_0" },
 * });
 * const runner = new WorkflowRunner({ client, contextManager });
 * await server.stop();
 */
export async function setupBackend(options: SetupBackendOptions): Promise<BackendSetup> {
  const mode = options.budgetMode ?? BudgetMode.BACKEND;
  const log = options.logger ?? defaultServerLogger;
  const server = options.server ?? new ServerManager(options);
  const hardware = await server.detectHardware();
  const launch = launchFor(options, mode, log);
  try {
    await server.start(launch);
    const budgetTokens = await server.resolveBudget(mode, options.manualTokens);
    if (options.backend === "ollama" && options.client) {
      const numCtx = mode === BudgetMode.BACKEND ? null : budgetTokens;
      options.client.setNumCtx(numCtx);
      log(
        numCtx === null
          ? "num_ctx not sent: Ollama uses its default"
          : `num_ctx set to ${numCtx} on the client`,
      );
    }
    const strategy = options.strategy ?? new TieredCompact();
    const contextManager = new ContextManager({
      strategy,
      budgetTokens,
      ...(options.compactThreshold !== undefined && { compactThreshold: options.compactThreshold }),
    });
    log(
      `ContextManager: ${budgetTokens} tokens, ${strategy.constructor.name}, compaction above ${contextManager.compactThreshold}`,
    );
    return { server, contextManager, budgetTokens, hardware };
  } catch (error) {
    if (!options.server) await server.stop().catch(() => {});
    throw error;
  }
}

function launchFor(
  options: SetupBackendOptions,
  mode: BudgetMode,
  log: (line: string) => void,
): LaunchOptions {
  const launch: LaunchOptions = {
    ...options.launch,
    ...(options.ggufPath !== undefined && { ggufPath: options.ggufPath }),
    ...(options.model !== undefined && { model: options.model }),
  };
  if (options.backend !== "llamaserver") return launch;
  if (mode === BudgetMode.MANUAL) {
    const ctx = contextFlagForSlot(checkManualTokens(options.manualTokens), launch);
    return { ...launch, ctx };
  }
  if (mode === BudgetMode.FORGE_FULL || mode === BudgetMode.FORGE_FAST) {
    if (launch.ctx !== undefined) log(`${mode}: ignoring ctx ${launch.ctx}; llama-server sizes the context`);
    const { ctx: _ignored, ...rest } = launch;
    return rest;
  }
  return launch;
}
