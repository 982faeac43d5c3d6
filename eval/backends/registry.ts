/**
 * The backends an eval can run against. Each one starts a session that makes a client per run
 * (and, when it speaks OpenAI's chat-completions API, an endpoint for the AI SDK peer loop).
 * Add a backend by adding an entry to `BACKENDS`.
 */
import { OllamaClient } from "../../src/clients/ollama-client.ts";
import { OpenAICompatibleClient } from "../../src/clients/openai-compatible-client.ts";
import type { LLMClient } from "../../src/core/types.ts";
import type { PeerEndpoint } from "../run/peer-run.ts";
import type { EvalScenario } from "../scenarios/scenario.ts";
import { DEFAULT_PROFILE, profileByName } from "../sim-model/profiles.ts";
import { startSimModel } from "../sim-model/server.ts";
import { simModelName } from "../sim-model/wire.ts";

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
  createClient(target: RunTarget): LLMClient;
  /** The OpenAI-compatible endpoint the AI SDK peer uses; absent when the backend has none. */
  peerEndpoint?(target: RunTarget): PeerEndpoint;
  /** Options a worker thread starts the same backend with (the sim-model: its URL). */
  workerOptions: BackendOptions;
  close(): Promise<void>;
}

/** A backend kind. */
export interface BackendDefinition {
  name: string;
  description: string;
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

/** Every backend by name. */
export const BACKENDS: Readonly<Record<string, BackendDefinition>> = {
  "sim-model": {
    name: "sim-model",
    description:
      "The fault-injecting OpenAI-compatible sim-model (in-process unless --base-url points at a running `forge sim-model`); --profile picks the faults.",
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
      return {
        backend: "sim-model",
        model: `sim/${profile}`,
        simulated: true,
        profile,
        createClient: (target) =>
          new OpenAICompatibleClient({
            baseUrl: baseURL,
            model: modelId(target),
            mode: "native",
            logger: quiet,
            timeoutMs: 60_000,
          }),
        peerEndpoint: (target) => ({ baseURL, modelId: modelId(target) }),
        workerOptions: { profile, baseUrl: baseURL },
        close: async () => server?.close(),
      };
    },
  },
  "openai-compatible": {
    name: "openai-compatible",
    description:
      "Any OpenAI-compatible server (llama-server, llamafile, vLLM, LM Studio): --base-url (default http://127.0.0.1:8080/v1) and --model.",
    async start(options) {
      const model = requireModel("openai-compatible", options);
      const baseURL = options.baseUrl ?? "http://127.0.0.1:8080/v1";
      return {
        backend: "openai-compatible",
        model,
        simulated: false,
        profile: null,
        createClient: () =>
          new OpenAICompatibleClient({
            baseUrl: baseURL,
            model,
            logger: quiet,
            ...(options.apiKey && { apiKey: options.apiKey }),
          }),
        peerEndpoint: () => ({ baseURL, modelId: model, ...(options.apiKey && { apiKey: options.apiKey }) }),
        workerOptions: withoutScenarios(options),
        close: async () => {},
      };
    },
  },
  ollama: {
    name: "ollama",
    description:
      "Ollama's native API: --model (e.g. qwen3:8b), --base-url (default http://127.0.0.1:11434). The peer uses its /v1 API.",
    async start(options) {
      const model = requireModel("ollama", options);
      const baseUrl = (options.baseUrl ?? "http://127.0.0.1:11434").replace(/\/+$/, "");
      return {
        backend: "ollama",
        model,
        simulated: false,
        profile: null,
        createClient: () => new OllamaClient({ model, baseUrl, logger: quiet }),
        peerEndpoint: () => ({ baseURL: `${baseUrl}/v1`, modelId: model }),
        workerOptions: withoutScenarios(options),
        close: async () => {},
      };
    },
  },
  "llama-cpp": {
    name: "llama-cpp",
    description:
      "A GGUF run in-process by node-llama-cpp (LlamaCppClient): --model <path.gguf>. One model for the whole batch; no AI SDK peer.",
    async start(options) {
      const modelPath = requireModel("llama-cpp", options);
      // Loaded on demand: node-llama-cpp is large, and the model loads once for every run.
      const { LlamaCppClient } = await import("../../src/clients/llama-cpp.ts");
      const client = new LlamaCppClient({ modelPath, logger: quiet });
      return {
        backend: "llama-cpp",
        model: modelPath.split("/").pop() ?? modelPath,
        simulated: false,
        profile: null,
        createClient: () => client,
        workerOptions: withoutScenarios(options),
        close: () => client.dispose(),
      };
    },
  },
  anthropic: {
    name: "anthropic",
    description:
      "Anthropic's Messages API: --model (e.g. claude-haiku-4-5), key from --api-key or ANTHROPIC_API_KEY. No AI SDK peer.",
    async start(options) {
      const model = requireModel("anthropic", options);
      // Loaded on demand: the Anthropic SDK is large and most evals never use it.
      const { AnthropicClient } = await import("../../src/clients/anthropic-client.ts");
      return {
        backend: "anthropic",
        model,
        simulated: false,
        profile: null,
        createClient: () =>
          new AnthropicClient({
            model,
            logger: quiet,
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
  return definition.start(options);
}
