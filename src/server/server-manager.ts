/**
 * ServerManager: a promise-based facade over the server-manager statechart. It starts, reuses,
 * restarts and stops a llama-server (or attaches to Ollama), reports crashes, and resolves the
 * context budget, logging everything it detects and chooses.
 */
import { createActor, waitFor } from "xstate";
import { fetchServerProps, type ServerProps } from "../clients/llama-server/props.ts";
import { BudgetResolutionError, type ForgeError, HardwareDetectionError } from "../core/errors.ts";
import { checkManualTokens, contextFlagForSlot, halveContext, ollamaTierTokens } from "./budget.ts";
import { BudgetMode, isBudgetMode } from "./budget-mode.ts";
import { errorOfFailure, ServerCrashedError, ServerStartError } from "./errors.ts";
import { detectHardware, type HardwareProfile } from "./hardware.ts";
import { type LaunchConfig, type LaunchOptions, launchConfigSchema } from "./launch-config.ts";
import { resolveLlamaServerPath } from "./llama-server-path.ts";
import { defaultServerLogger, type ServerLogger } from "./logger.ts";
import {
  createServerManagerMachine,
  type ServerBackend,
  type ServerManagerActor,
  type ServerManagerSnapshot,
  type ServerStatus,
  serverStatusOf,
} from "./server-manager.machine.ts";
import { type SupervisionOptions, supervisionPolicySchema } from "./supervision.ts";

/** Options of {@link ServerManager}. */
export interface ServerManagerOptions {
  backend: ServerBackend;
  /** llama-server's port; unset picks a free one (and keeps it across restarts while free). */
  port?: number;
  /** Interface llama-server binds; default `127.0.0.1`. */
  host?: string;
  /**
   * The llama-server binary; default `resolveLlamaServerPath()`: `$LLAMA_SERVER_PATH`, `PATH`,
   * then the cached build.
   */
  binaryPath?: string;
  /** Ollama's base URL; default `http://127.0.0.1:11434`. */
  ollamaUrl?: string;
  /** Receives what was detected and chosen; default `console.info` with a prefix. */
  logger?: ServerLogger;
  /** Receives every line llama-server prints (nothing by default). */
  onServerLine?: (line: string) => void;
  /** How long llama-server may take to answer `/health` with 200. Default 60 000. */
  startTimeoutMs?: number;
  /** Grace between SIGTERM and SIGKILL. Default 5 000. */
  stopTimeoutMs?: number;
  /** Replaces GPU detection (default: systeminformation + amdgpu sysfs). */
  detectHardware?: () => Promise<HardwareProfile | null>;
  /**
   * llama-server's API key: passed to it in `LLAMA_API_KEY` (so every route but `/health` needs
   * it) and sent by the manager's own probes. Unset: llama-server runs without a key.
   */
  apiKey?: string;
  /**
   * Restart llama-server after a crash or a failed liveness probe, within limits (see
   * `SupervisionOptions`; `{}` takes the defaults). Unset: a crash is reported and nothing more.
   */
  supervision?: SupervisionOptions;
}

/** A running server. */
export interface ServerInfo {
  backend: ServerBackend;
  /** `http://host:port` of llama-server, or Ollama's URL. */
  baseUrl: string;
  port: number | null;
  pid: number | null;
  /** What llama-server reports in `/props` (null for Ollama). */
  props: ServerProps | null;
  config: LaunchConfig;
}

/** What {@link ServerManager.on} delivers, by event name. */
export interface ServerManagerEvents {
  "server.ready": ServerInfo;
  "server.crashed": ServerCrashedError;
  "server.failed": ForgeError;
  "server.stopped": undefined;
  "server.status": ServerStatus;
  /** The liveness probe failed (the message says how); the server is being killed. */
  "server.unhealthy": string;
  /** A supervised restart is scheduled. */
  "server.restarting": { attempt: number; delayMs: number };
}

type Listener<K extends keyof ServerManagerEvents> = (payload: ServerManagerEvents[K]) => void;

/**
 * Owns one backend server. For llama-server it spawns the process, polls `/health`, reads
 * `/props`, reuses the running process when `start` is called with the same configuration,
 * stops it with SIGTERM then SIGKILL, and reports an unexpected exit as `server.crashed` (with a
 * `ServerCrashedError`) until `restart()` is called; with a `supervision` policy it restarts it
 * itself after a crash or a failed liveness probe, within the policy's limits. For Ollama it
 * spawns nothing: `start` checks that Ollama answers and `stop` unloads the model (`keep_alive: 0`).
 * @example
 * const server = new ServerManager({ backend: "llamaserver" });
 * const info = await server.start({ ggufPath: "model.gguf", ctx: 8192, cacheTypeK: "q8_0", cacheTypeV: "q8_0" });
 * server.on("server.crashed", (error) => console.error(error.message));
 * const budget = await server.resolveBudget(BudgetMode.FORGE_FULL);
 * await server.stop();
 */
export class ServerManager {
  readonly backend: ServerBackend;
  readonly host: string;
  /** The statechart actor, for inspection. */
  readonly actor: ServerManagerActor;
  readonly #log: ServerLogger;
  /** The backend's name in log lines. */
  readonly #label: string;
  readonly #listeners = new Map<keyof ServerManagerEvents, Set<Listener<keyof ServerManagerEvents>>>();
  readonly #detect: () => Promise<HardwareProfile | null>;
  #hardware: Promise<HardwareProfile | null> | undefined;
  #lastError: ForgeError | null = null;
  readonly #apiKey: string | null;

  constructor(options: ServerManagerOptions) {
    this.backend = options.backend;
    this.host = options.host ?? "127.0.0.1";
    this.#log = options.logger ?? defaultServerLogger;
    this.#label = options.backend === "ollama" ? "Ollama" : "llama-server";
    this.#apiKey = options.apiKey ?? null;
    const log = this.#log;
    this.#detect =
      options.detectHardware ??
      (() => detectHardware({ onSkipped: (gpu) => log(`GPU skipped: ${gpu.name} (${gpu.reason})`) }));
    const machine = createServerManagerMachine({
      log: (line) => log(`llama-server: ${line}`),
      ...(options.onServerLine && { onServerLine: options.onServerLine }),
    });
    this.actor = createActor(machine, {
      input: {
        backend: options.backend,
        host: this.host,
        port: options.port ?? null,
        binaryPath:
          options.backend === "llamaserver" ? (options.binaryPath ?? resolveLlamaServerPath()) : null,
        ollamaUrl: (options.ollamaUrl ?? "http://127.0.0.1:11434").replace(/\/+$/, ""),
        startTimeoutMs: options.startTimeoutMs ?? 60_000,
        stopTimeoutMs: options.stopTimeoutMs ?? 5_000,
        supervision: options.supervision ? supervisionPolicySchema.parse(options.supervision) : null,
        apiKey: options.apiKey ?? null,
      },
    });
    this.#wireEvents();
    // Listening before start: an error in the statechart is logged and rejects the caller's
    // `start()` / `stop()` (their waitFor), instead of reaching XState's unhandled error report.
    this.actor.subscribe({
      error: (error) => this.#log(`error: ${error instanceof Error ? error.message : String(error)}`),
    });
    this.actor.start();
  }

  /** The lifecycle status. */
  get status(): ServerStatus {
    return serverStatusOf(this.actor.getSnapshot());
  }

  /** The running server, or `null` when it is not healthy. */
  get info(): ServerInfo | null {
    const snapshot = this.actor.getSnapshot();
    return snapshot.hasTag("healthy") ? this.#infoOf(snapshot) : null;
  }

  /** Supervised restarts since the last explicit `start()` or `restart()`. */
  get restarts(): number {
    return this.actor.getSnapshot().context.restarts;
  }

  /** The error of the last failed start or crash, if any. */
  get lastError(): ForgeError | null {
    return this.#lastError;
  }

  /** Listen to an event; returns the function that stops listening. */
  on<K extends keyof ServerManagerEvents>(event: K, listener: Listener<K>): () => void {
    const listeners = this.#listeners.get(event) ?? new Set();
    listeners.add(listener as Listener<keyof ServerManagerEvents>);
    this.#listeners.set(event, listeners);
    return () => listeners.delete(listener as Listener<keyof ServerManagerEvents>);
  }

  /**
   * Start the server, or reuse the running one when its configuration is the same (a different
   * configuration restarts it). Resolves once it is healthy.
   * @throws {PortInUseError} when the port is taken; {ServerStartError} when it exits or times out
   * first; {ContextDiscoveryError} when `/props` is unusable; `TypeError` for invalid options.
   */
  async start(options: LaunchOptions): Promise<ServerInfo> {
    const config = this.#parseConfig(options);
    this.actor.send({ type: "server.start", config });
    return this.#settle();
  }

  /**
   * Restart with the current configuration, changed by `overrides` (e.g. `{ ctx }`). Also the way
   * back from a crash or a failed start.
   */
  async restart(overrides: Partial<LaunchOptions> = {}): Promise<ServerInfo> {
    const current = this.actor.getSnapshot().context.config;
    if (current === null)
      throw new ServerStartError({ kind: "spawn_failed", message: "restart(): start() was never called." });
    const config = this.#parseConfig({ ...current, ...overrides });
    this.#log(`restarting ${this.#label}`);
    this.actor.send({ type: "server.restart", config });
    return this.#settle();
  }

  /** Stop the server (SIGTERM, then SIGKILL after the grace) or unload the Ollama model. */
  async stop(): Promise<void> {
    const status = this.status;
    if (status === "idle" || status === "stopped") return;
    this.actor.send({ type: "server.stop" });
    await waitFor(this.actor, (snapshot) => snapshot.matches("stopped"));
  }

  /** Detect the GPUs once (later calls reuse the result) and log what was found. */
  detectHardware(): Promise<HardwareProfile | null> {
    this.#hardware ??= this.#detect().then(
      (hardware) => {
        this.#log(
          hardware
            ? `GPU detected: ${hardware.gpuName}, ${hardware.vramTotalMb} MiB VRAM in total (${hardware.gpus.map((gpu) => gpu.source).join(", ")})`
            : "no NVIDIA or AMD GPU with readable VRAM detected",
        );
        return hardware;
      },
      (error: unknown) => {
        if (!(error instanceof HardwareDetectionError)) throw error;
        this.#log(`GPU detection failed, treating the machine as GPU-less: ${error.message}`);
        return null;
      },
    );
    return this.#hardware;
  }

  /**
   * The context budget in tokens for `mode`. `manual` returns `manualTokens`. For Ollama the
   * others come from its VRAM tiers (forge-fast halves the tier). For llama-server `backend` and
   * `forge-full` read `n_ctx` from `/props`; `forge-fast` reads it, restarts the server with half
   * of it, and returns what `/props` reports afterwards.
   * @throws {BudgetResolutionError} when no budget can be determined.
   */
  async resolveBudget(mode: BudgetMode, manualTokens?: number): Promise<number> {
    if (!isBudgetMode(mode)) {
      throw new BudgetResolutionError(
        `Unknown budget mode '${String(mode)}'; use one of ${Object.values(BudgetMode).join(", ")}.`,
      );
    }
    if (mode === BudgetMode.MANUAL) return this.#manualBudget(checkManualTokens(manualTokens));
    if (this.backend === "ollama") return this.#ollamaBudget(mode);
    const full = await this.#readContext(mode);
    const config = this.actor.getSnapshot().context.config!;
    if (mode !== BudgetMode.FORGE_FAST) {
      if (mode === BudgetMode.FORGE_FULL && config.ctx !== undefined) {
        this.#log(
          `note: forge-full expects llama-server to size the context itself, but it runs with -c ${config.ctx}`,
        );
      }
      this.#log(`budget: ${full} tokens (${mode}: n_ctx from /props)`);
      return full;
    }
    const ctx = contextFlagForSlot(halveContext(full), config);
    this.#log(
      `forge-fast: /props n_ctx is ${full}; restarting llama-server with -c ${ctx} for ${halveContext(full)} per slot`,
    );
    const info = await this.restart({ ctx });
    const tokens = info.props?.nCtx ?? halveContext(full);
    this.#log(`budget: ${tokens} tokens (forge-fast: n_ctx from /props after the restart)`);
    return tokens;
  }

  async #manualBudget(tokens: number): Promise<number> {
    if (this.backend === "llamaserver" && this.status === "healthy") {
      const { nCtx } = await fetchServerProps(this.info!.baseUrl, undefined, this.#apiKey);
      if (nCtx < tokens) {
        this.#log(`warning: the manual budget of ${tokens} tokens exceeds llama-server's n_ctx of ${nCtx}`);
      }
    }
    this.#log(`budget: ${tokens} tokens (manual)`);
    return tokens;
  }

  async #ollamaBudget(mode: BudgetMode): Promise<number> {
    const hardware = await this.detectHardware();
    const tier = ollamaTierTokens(hardware?.vramTotalMb ?? null);
    const tokens = mode === BudgetMode.FORGE_FAST ? halveContext(tier) : tier;
    const vram = hardware ? `${hardware.vramTotalMb} MiB VRAM` : "no GPU detected";
    this.#log(
      `budget: ${tokens} tokens (${mode}: Ollama's VRAM tier for ${vram} is ${tier}${mode === BudgetMode.FORGE_FAST ? ", halved" : ""})`,
    );
    return tokens;
  }

  async #readContext(mode: BudgetMode): Promise<number> {
    const info = this.info;
    if (info === null) {
      throw new BudgetResolutionError(
        `Cannot resolve a '${mode}' budget: llama-server is ${this.status}, not healthy. Call start() first.`,
      );
    }
    try {
      return (await fetchServerProps(info.baseUrl, undefined, this.#apiKey)).nCtx;
    } catch (error) {
      throw new BudgetResolutionError(
        `Cannot resolve a '${mode}' budget: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
  }

  #parseConfig(options: LaunchOptions): LaunchConfig {
    const parsed = launchConfigSchema.safeParse(options);
    if (!parsed.success)
      throw new TypeError(`ServerManager: invalid launch options: ${parsed.error.message}`);
    const config = parsed.data;
    if (this.backend === "llamaserver" && !config.ggufPath) {
      throw new TypeError("ServerManager: llama-server needs ggufPath (the GGUF file to load).");
    }
    if (this.backend === "ollama" && !config.model) {
      throw new TypeError("ServerManager: Ollama needs model (the model name to unload on stop).");
    }
    return config;
  }

  /** Wait until no start or stop is in progress, then report the outcome. */
  async #settle(): Promise<ServerInfo> {
    const snapshot = await waitFor(
      this.actor,
      (current) => !current.hasTag("starting") && !current.hasTag("stopping"),
    );
    if (snapshot.hasTag("healthy")) return this.#infoOf(snapshot);
    const { failure, exit } = snapshot.context;
    if (snapshot.matches("failed") && failure) throw errorOfFailure(failure);
    if (snapshot.matches("crashed") && exit) throw new ServerCrashedError(exit);
    throw new ServerStartError({
      kind: "exited_during_start",
      message: `${this.#label} was stopped before it became ready.`,
    });
  }

  #infoOf(snapshot: ServerManagerSnapshot): ServerInfo {
    const { context } = snapshot;
    const isOllama = context.backend === "ollama";
    return {
      backend: context.backend,
      baseUrl: isOllama ? context.ollamaUrl : `http://${context.host}:${context.boundPort}`,
      port: isOllama ? null : context.boundPort,
      pid: context.pid,
      props: context.props,
      config: context.config!,
    };
  }

  #emit<K extends keyof ServerManagerEvents>(event: K, payload: ServerManagerEvents[K]): void {
    for (const listener of this.#listeners.get(event) ?? []) listener(payload);
  }

  #wireEvents(): void {
    this.actor.on("server.ready", () => {
      const info = this.#infoOf(this.actor.getSnapshot());
      const props = info.props
        ? `n_ctx ${info.props.nCtx} per slot, ${info.props.totalSlots ?? "?"} slot(s), build ${info.props.buildInfo ?? "?"}`
        : "nothing spawned";
      this.#log(`${this.#label} ready at ${info.baseUrl} (pid ${info.pid ?? "none"}; ${props})`);
      this.#emit("server.ready", info);
    });
    this.actor.on("server.reused", ({ pid }) => {
      this.#log(`reusing the running ${this.#label} (pid ${pid ?? "none"}): same configuration`);
    });
    this.actor.on("server.crashed", ({ exit }) => {
      const error = new ServerCrashedError(exit);
      this.#lastError = error;
      this.#log(error.message);
      this.#emit("server.crashed", error);
    });
    this.actor.on("server.failed", ({ failure }) => {
      const error = errorOfFailure(failure);
      this.#lastError = error;
      this.#log(
        failure.kind === "gave_up"
          ? `error: ${failure.message}`
          : `${this.#label} failed to start: ${failure.message}`,
      );
      this.#emit("server.failed", error);
    });
    this.actor.on("server.unhealthy", ({ message }) => {
      this.#lastError = new ServerStartError({ kind: "unresponsive", message });
      this.#log(`error: ${message}`);
      this.#emit("server.unhealthy", message);
    });
    this.actor.on("server.restarting", ({ attempt, delayMs }) => {
      const cause = this.#lastError ? ` after: ${this.#lastError.message.split("\n")[0]}` : "";
      this.#log(`restarting ${this.#label} in ${delayMs} ms (supervised restart ${attempt})${cause}`);
      this.#emit("server.restarting", { attempt, delayMs });
    });
    this.actor.on("server.stopped", () => {
      const { failure } = this.actor.getSnapshot().context;
      if (failure?.kind === "unreachable")
        this.#log(`warning: could not unload the Ollama model: ${failure.message}`);
      this.#log(`${this.#label} stopped`);
      this.#emit("server.stopped", undefined);
    });
    let status = this.status;
    this.actor.subscribe((snapshot) => {
      const next = serverStatusOf(snapshot);
      if (next === status) return;
      status = next;
      this.#emit("server.status", next);
    });
  }
}
