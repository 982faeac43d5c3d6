/**
 * The backends an eval can run against. Each one starts a session that makes a client per run
 * (and, when it speaks OpenAI's chat-completions API, an endpoint for the AI SDK peer loop).
 * Add a backend by adding an entry to `BACKENDS`.
 */
import type {
  LlamaCppClient,
  LlamaCppClientOptions,
  LlamaCppMode,
} from "../../src/clients/llama-cpp/client.ts";
import { OllamaClient } from "../../src/clients/ollama/client.ts";
import { OpenAICompatibleClient } from "../../src/clients/openai/compatible-client.ts";
import type { SamplingParams } from "../../src/clients/sampling.ts";
import type { LLMClient } from "../../src/core/types.ts";
import type { TemplateCallFormat } from "../../src/prompts/chat-template.ts";
import type { BackendSettings } from "../batch/backend-settings.ts";
import { createLlamaServerTokenizer, type PromptTokenizer } from "../run/context-limit.ts";
import type { PeerEndpoint } from "../run/peer-run.ts";
import type { EvalScenario } from "../scenarios/scenario.ts";
import { DEFAULT_PROFILE, profileByName } from "../sim-model/profiles.ts";
import { startSimModel } from "../sim-model/server.ts";
import { simModelName } from "../sim-model/wire.ts";
import { serverCallFormat } from "./call-format.ts";

/** The sampling the eval sets (`--temperature`, `--top-p`, `--top-k`); an absent field is the backend's default. */
export type EvalSampling = Pick<SamplingParams, "temperature" | "topP" | "topK">;

/** `--tool-mode`: OpenAICompatibleClient's `mode`. */
export type EvalToolMode = "native" | "prompt" | "auto";
/** `--think`: the clients' `think` option (`on` → true, `off` → false, `auto` → left unset). */
export type EvalThink = "on" | "off" | "auto";

/** The client `think` option an `--think` value stands for (`undefined`: the client decides). */
export function thinkOption(think: EvalThink | undefined): boolean | undefined {
  return think === "on" ? true : think === "off" ? false : undefined;
}

/** What the CLI passes to a backend. */
export interface BackendOptions {
  model?: string;
  baseUrl?: string;
  apiKey?: string;
  /** sim-model: the fault profile. */
  profile?: string;
  /** sim-model: added latency per request. */
  delayMs?: number;
  /** Scenarios the batch will run (a sim-model serves only these). */
  scenarios?: readonly EvalScenario[];
  /** Sent with every request, by both loops; only backends that take sampling accept it. */
  sampling?: EvalSampling;
  /** llama-cpp: LlamaCppClient's `mode`. */
  llamaCppMode?: LlamaCppMode;
  /** llama-cpp: LlamaCppClient's `threads`. */
  threads?: number;
  /** sim-model, openai-compatible: native function calling, prompt-injected tools, or auto. */
  toolMode?: EvalToolMode;
  /** openai-compatible, ollama: the client's `think` option. */
  think?: EvalThink;
}

/** One run's identity, for backends that route per run (the sim-model). */
export interface RunTarget {
  scenario: EvalScenario;
  seed: number;
}

/** A started backend. */
export interface BackendSession {
  /** Recorded in every row. */
  backend: string;
  model: string;
  simulated: boolean;
  profile: string | null;
  /** The settings every row of the batch records. */
  settings: BackendSettings;
  createClient(target: RunTarget): LLMClient;
  /**
   * The stronger client a config with `escalation` switches to for this run (the sim-model: the
   * same scenario and seed under `profile`). Absent: the backend has none, and such configs fail.
   */
  createEscalationClient?(target: RunTarget, profile: string): LLMClient;
  /** Called when the run that `createClient` served is over (llama-cpp frees the run's context). */
  releaseClient?(client: LLMClient): Promise<void>;
  /**
   * Counts prompts in the model's real tokens and knows its context window: this library's loop
   * then caps each run's budget there and reports a prompt that would not fit as
   * `context_exceeded`. Absent: the scenario's budget holds as is.
   */
  tokenizer?: PromptTokenizer;
  /**
   * How the model writes a call, read from the server's chat template (ADR 035): the runs' rescue
   * reads it first, as `forge proxy --chat-template auto` does. Read once, on the first run that
   * needs it. Absent, or `null`: the built-in formats only.
   */
  callFormat?(): Promise<TemplateCallFormat | null>;
  /** The OpenAI-compatible endpoint the AI SDK peer uses; absent when the backend has none. */
  peerEndpoint?(target: RunTarget): PeerEndpoint;
  /** Options a worker thread starts the same backend with (the sim-model: its URL). */
  workerOptions: BackendOptions;
  close(): Promise<void>;
}

/** Which run options a backend uses; the others are refused rather than silently ignored. */
export interface BackendCapabilities {
  /** `--temperature`, `--top-p`, `--top-k` reach its client (and the AI SDK peer). */
  sampling: boolean;
  /** The run's seed goes with every request as the request seed (its client has a `seed` option). */
  requestSeed: boolean;
  /** `--llama-cpp-mode` and `--threads`. */
  llamaCpp: boolean;
  /** `--tool-mode` reaches its client (OpenAICompatibleClient's `mode`); otherwise rows record null. */
  toolMode: boolean;
  /** `--think` reaches its client (the `think` option); otherwise rows record null. */
  think: boolean;
}

/** A backend kind. */
export interface BackendDefinition {
  name: string;
  description: string;
  capabilities: BackendCapabilities;
  start(options: BackendOptions): Promise<BackendSession>;
}

/** Raised for an unknown backend or a missing option; the message says what is valid. */
export class BackendConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BackendConfigError";
  }
}

const quiet = () => {};

function withoutScenarios(options: BackendOptions): BackendOptions {
  const { scenarios: _scenarios, ...rest } = options;
  return rest;
}

function requireModel(backend: string, options: BackendOptions): string {
  if (!options.model) throw new BackendConfigError(`--backend ${backend} needs --model`);
  return options.model;
}

/** The sim-model plays tool calls natively or, asked without `tools`, as prompt-format text; it never thinks. */
const SIMULATED: BackendCapabilities = {
  sampling: false,
  requestSeed: false,
  llamaCpp: false,
  toolMode: true,
  think: false,
};
const OPENAI_COMPATIBLE: BackendCapabilities = {
  sampling: true,
  requestSeed: true,
  llamaCpp: false,
  toolMode: true,
  think: true,
};
/** OllamaClient always sends native tools; its `think` goes on the wire as Ollama's `think`. */
const OLLAMA: BackendCapabilities = {
  sampling: true,
  requestSeed: true,
  llamaCpp: false,
  toolMode: false,
  think: true,
};
/** llama-cpp's own choice of native calls or free text is `--llama-cpp-mode`. */
const LLAMA_CPP: BackendCapabilities = {
  sampling: true,
  requestSeed: true,
  llamaCpp: true,
  toolMode: false,
  think: false,
};
/** AnthropicClient has no seed option (the Messages API takes none). */
const ANTHROPIC: BackendCapabilities = {
  sampling: true,
  requestSeed: false,
  llamaCpp: false,
  toolMode: false,
  think: false,
};

/** The settings a backend with `capabilities` runs `options` with, as rows record them. */
export function settingsOf(capabilities: BackendCapabilities, options: BackendOptions): BackendSettings {
  return {
    temperature: options.sampling?.temperature ?? null,
    topP: options.sampling?.topP ?? null,
    topK: options.sampling?.topK ?? null,
    requestSeed: capabilities.requestSeed,
    llamaCppMode: capabilities.llamaCpp ? (options.llamaCppMode ?? "functions") : null,
    threads: capabilities.llamaCpp ? (options.threads ?? null) : null,
    toolMode: capabilities.toolMode ? (options.toolMode ?? "auto") : null,
    think: capabilities.think ? (options.think ?? "auto") : null,
  };
}

/** Refuse options `capabilities` has no use for, naming them. */
export function checkCapabilities(
  name: string,
  capabilities: BackendCapabilities,
  options: BackendOptions,
): void {
  const given = (flags: [string, unknown][]) =>
    flags.filter(([, value]) => value !== undefined).map(([flag]) => flag);
  const sampling = given([
    ["--temperature", options.sampling?.temperature],
    ["--top-p", options.sampling?.topP],
    ["--top-k", options.sampling?.topK],
  ]);
  const llamaCpp = given([
    ["--llama-cpp-mode", options.llamaCppMode],
    ["--threads", options.threads],
  ]);
  const unused = [
    ...(!capabilities.toolMode && options.toolMode !== undefined
      ? [
          `--tool-mode (only sim-model and openai-compatible do${capabilities.llamaCpp ? "; llama-cpp: --llama-cpp-mode functions|free" : ""})`,
        ]
      : []),
    ...(!capabilities.think && options.think !== undefined
      ? ["--think (only openai-compatible and ollama do)"]
      : []),
    ...(!capabilities.sampling && sampling.length > 0
      ? [`${sampling.join(", ")} (its replies are scripted, not sampled)`]
      : []),
    ...(!capabilities.llamaCpp && llamaCpp.length > 0
      ? [`${llamaCpp.join(", ")} (only --backend llama-cpp does)`]
      : []),
  ];
  if (unused.length > 0)
    throw new BackendConfigError(`--backend ${name} does not use ${unused.join(", nor ")}`);
}

/**
 * The LlamaCppClient options of one run: the eval's sampling, mode and threads, and the run's
 * seed (each run gets its own client, so runs differ by run index and repeat with the same seed).
 */
export function llamaCppClientOptions(
  modelPath: string,
  options: BackendOptions,
  seed: number,
): LlamaCppClientOptions {
  return {
    modelPath,
    logger: quiet,
    ...options.sampling,
    seed,
    ...(options.llamaCppMode && { mode: options.llamaCppMode }),
    ...(options.threads !== undefined && { threads: options.threads }),
  };
}

/** Every backend by name. */
export const BACKENDS: Readonly<Record<string, BackendDefinition>> = {
  "sim-model": {
    name: "sim-model",
    description:
      "The fault-injecting OpenAI-compatible sim-model (in-process unless --base-url points at a running `npm run sim-model`); --profile picks the faults.",
    capabilities: SIMULATED,
    async start(options) {
      // `--model sim/<profile>` names the profile too.
      const fromModel = options.model?.startsWith("sim/") ? options.model.split("/")[1] : undefined;
      const profile = options.profile ?? fromModel ?? DEFAULT_PROFILE;
      profileByName(profile);
      const server = options.baseUrl
        ? null
        : await startSimModel({
            profile,
            ...(options.scenarios && { scenarios: options.scenarios }),
            ...(options.delayMs !== undefined && { delayMs: options.delayMs }),
          });
      const baseURL = options.baseUrl ?? (server as { url: string }).url;
      const modelId = (target: RunTarget) => simModelName(profile, target.scenario.id, target.seed);
      const simClient = (model: string) =>
        new OpenAICompatibleClient({
          baseUrl: baseURL,
          model,
          mode: options.toolMode ?? "native",
          logger: quiet,
          timeoutMs: 60_000,
        });
      return {
        backend: "sim-model",
        model: `sim/${profile}`,
        simulated: true,
        profile,
        settings: settingsOf(SIMULATED, { ...options, toolMode: options.toolMode ?? "native" }),
        createClient: (target) => simClient(simModelName(profile, target.scenario.id, target.seed)),
        createEscalationClient: (target, stronger) => {
          profileByName(stronger);
          return simClient(simModelName(stronger, target.scenario.id, target.seed));
        },
        peerEndpoint: (target) => ({ baseURL, modelId: modelId(target) }),
        workerOptions: {
          profile,
          baseUrl: baseURL,
          ...(options.toolMode && { toolMode: options.toolMode }),
        },
        close: async () => server?.close(),
      };
    },
  },
  "openai-compatible": {
    name: "openai-compatible",
    description:
      "Any OpenAI-compatible server (llama-server, llamafile, vLLM, LM Studio): --base-url (default http://127.0.0.1:8080/v1) and --model.",
    capabilities: OPENAI_COMPATIBLE,
    async start(options) {
      const model = requireModel("openai-compatible", options);
      const baseURL = options.baseUrl ?? "http://127.0.0.1:8080/v1";
      const apiKey = options.apiKey && { apiKey: options.apiKey };
      // llama-server's /props, /apply-template and /tokenize; a server without /props caps nothing.
      const props = new OpenAICompatibleClient({ baseUrl: baseURL, model, logger: quiet, ...apiKey });
      let callFormat: Promise<TemplateCallFormat | null> | undefined;
      return {
        backend: "openai-compatible",
        model,
        simulated: false,
        profile: null,
        settings: settingsOf(OPENAI_COMPATIBLE, options),
        createClient: (target) =>
          new OpenAICompatibleClient({
            baseUrl: baseURL,
            model,
            mode: options.toolMode ?? "auto",
            ...(thinkOption(options.think) !== undefined && { think: thinkOption(options.think) }),
            logger: quiet,
            ...options.sampling,
            seed: target.seed,
            ...apiKey,
          }),
        callFormat: () => {
          callFormat ??= serverCallFormat(baseURL, options.apiKey);
          return callFormat;
        },
        tokenizer: createLlamaServerTokenizer({
          baseUrl: baseURL,
          ...apiKey,
          contextLength: () => props.getContextLength(),
        }),
        peerEndpoint: (target) => ({
          baseURL,
          modelId: model,
          ...(options.apiKey && { apiKey: options.apiKey }),
          ...(options.sampling && { sampling: options.sampling }),
          seed: target.seed,
        }),
        workerOptions: withoutScenarios(options),
        close: async () => {},
      };
    },
  },
  ollama: {
    name: "ollama",
    description:
      "Ollama's native API: --model (e.g. qwen3:8b), --base-url (default http://127.0.0.1:11434). The peer uses its /v1 API.",
    capabilities: OLLAMA,
    async start(options) {
      const model = requireModel("ollama", options);
      const baseUrl = (options.baseUrl ?? "http://127.0.0.1:11434").replace(/\/+$/, "");
      return {
        backend: "ollama",
        model,
        simulated: false,
        profile: null,
        settings: settingsOf(OLLAMA, options),
        createClient: (target) =>
          new OllamaClient({
            model,
            baseUrl,
            logger: quiet,
            ...options.sampling,
            seed: target.seed,
            ...(thinkOption(options.think) !== undefined && { think: thinkOption(options.think) }),
          }),
        peerEndpoint: (target) => ({
          baseURL: `${baseUrl}/v1`,
          modelId: model,
          ...(options.sampling && { sampling: options.sampling }),
          seed: target.seed,
        }),
        workerOptions: withoutScenarios(options),
        close: async () => {},
      };
    },
  },
  "llama-cpp": {
    name: "llama-cpp",
    description:
      "A GGUF run in-process by node-llama-cpp (LlamaCppClient): --model <path.gguf>, --llama-cpp-mode, --threads. One model for the whole batch; no AI SDK peer.",
    capabilities: LLAMA_CPP,
    async start(options) {
      const model = requireModel("llama-cpp", options);
      // Loaded on demand: node-llama-cpp is large.
      const { LlamaCppClient } = await import("../../src/clients/llama-cpp/client.ts");
      const { acquireModel, assertModelFile, releaseModel } = await import(
        "../../src/clients/llama-cpp/engine.ts"
      );
      const modelPath = assertModelFile(model);
      // Each run gets its own client (its seed, a fresh context); holding the model here loads it once.
      await acquireModel(modelPath);
      const open = new Set<LlamaCppClient>();
      const release = async (client: LLMClient) => {
        for (const candidate of open) {
          if (candidate !== client) continue;
          open.delete(candidate);
          await candidate.dispose();
        }
      };
      return {
        backend: "llama-cpp",
        model: model.split("/").pop() ?? model,
        simulated: false,
        profile: null,
        settings: settingsOf(LLAMA_CPP, options),
        createClient: (target) => {
          const client = new LlamaCppClient(llamaCppClientOptions(modelPath, options, target.seed));
          open.add(client);
          return client;
        },
        releaseClient: release,
        workerOptions: withoutScenarios(options),
        close: async () => {
          for (const client of [...open]) await release(client);
          await releaseModel(modelPath);
        },
      };
    },
  },
  anthropic: {
    name: "anthropic",
    description:
      "Anthropic's Messages API: --model (e.g. claude-haiku-4-5), key from --api-key or ANTHROPIC_API_KEY. No request seed; no AI SDK peer.",
    capabilities: ANTHROPIC,
    async start(options) {
      const model = requireModel("anthropic", options);
      // Loaded on demand: the Anthropic SDK is large and most evals never use it.
      const { AnthropicClient } = await import("../../src/clients/anthropic/client.ts");
      return {
        backend: "anthropic",
        model,
        simulated: false,
        profile: null,
        settings: settingsOf(ANTHROPIC, options),
        createClient: () =>
          new AnthropicClient({
            model,
            logger: quiet,
            ...options.sampling,
            ...(options.apiKey && { apiKey: options.apiKey }),
            ...(options.baseUrl && { baseURL: options.baseUrl }),
          }),
        workerOptions: withoutScenarios(options),
        close: async () => {},
      };
    },
  },
};

/** Start a backend by name; an unknown name lists the valid ones. */
export async function startBackend(name: string, options: BackendOptions): Promise<BackendSession> {
  const definition = BACKENDS[name];
  if (!definition) {
    throw new BackendConfigError(
      `Unknown backend '${name}'. Valid backends: ${Object.keys(BACKENDS).join(", ")}`,
    );
  }
  checkCapabilities(name, definition.capabilities, options);
  return definition.start(options);
}
