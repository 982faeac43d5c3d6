/**
 * Per-request clients for backends that are not plain OpenAI-compatible servers: Ollama and
 * Anthropic-shaped APIs, through `OllamaClient` and `AnthropicClient`. These clients take
 * sampling as options, so the request's sampling fields are mapped; other fields cannot reach
 * these backends. Clients are reused per model and sampling, so their learned state (Ollama's
 * thinking support) survives across requests. They never retry (`NO_RETRIES`): the proxy passes a
 * transient backend error and its `Retry-After` on, and the caller's own client decides.
 */
import { AnthropicClient } from "../../clients/anthropic/client.ts";
import { OllamaClient } from "../../clients/ollama/client.ts";
import { NO_RETRIES } from "../../clients/retry.ts";
import type { LLMClient, SamplingOverrides } from "../../core/types.ts";
import { ProxyErrorKind, ProxyHttpError } from "../errors.ts";
import type { BackendClientConfig, BackendClientFactory } from "./http-backend.ts";

const CACHE_LIMIT = 64;

/** Sampling fields of an OpenAI-style body, as client options. */
export type MappedSampling = Pick<
  SamplingOverrides,
  "temperature" | "topP" | "topK" | "minP" | "maxTokens" | "seed"
>;

/** Read the sampling fields the clients understand from forwarded request fields. */
export function samplingFromBody(extraBody: Record<string, unknown>): MappedSampling {
  const number = (key: string) =>
    typeof extraBody[key] === "number" ? (extraBody[key] as number) : undefined;
  const sampling: MappedSampling = {};
  const entries: [keyof MappedSampling, number | undefined][] = [
    ["temperature", number("temperature")],
    ["topP", number("top_p")],
    ["topK", number("top_k")],
    ["minP", number("min_p")],
    ["maxTokens", number("max_tokens") ?? number("max_completion_tokens")],
    ["seed", number("seed")],
  ];
  for (const [key, value] of entries) if (value !== undefined) sampling[key] = value;
  return sampling;
}

/** Clients for an Ollama server, sent the backend key as Bearer; `defaultModel` serves requests that name none. */
export function ollamaClientFactory(defaultModel?: string): BackendClientFactory {
  return cachedFactory((model, sampling, config) => {
    const { maxTokens, ...rest } = sampling;
    return new OllamaClient({
      model,
      baseUrl: config.baseUrl,
      ...(config.apiKey !== undefined && { apiKey: config.apiKey }),
      timeoutMs: config.timeoutMs,
      ...rest,
      ...(maxTokens !== undefined && { maxTokens }),
      ...NO_RETRIES,
      logger: () => {},
    });
  }, defaultModel);
}

/**
 * Clients for an Anthropic-shaped Messages API; `defaultModel` serves requests that name none.
 * The backend key is sent as `x-api-key`. Without one, only Anthropic's own API
 * (`https://api.anthropic.com`) gets the SDK's ambient credential (`ANTHROPIC_API_KEY`); any
 * other URL gets no credential at all.
 */
export function anthropicClientFactory(defaultModel?: string): BackendClientFactory {
  return cachedFactory((model, sampling, config) => {
    const { minP: _unused, seed: _alsoUnused, ...supported } = sampling;
    return new AnthropicClient({
      model,
      baseURL: config.baseUrl,
      ...anthropicCredential(config),
      timeoutMs: config.timeoutMs,
      ...supported,
      ...NO_RETRIES,
      logger: () => {},
    });
  }, defaultModel);
}

/** The `apiKey` option of an Anthropic client: the backend key, the SDK's ambient one, or none. */
export function anthropicCredential(config: BackendClientConfig): { apiKey?: string | null } {
  if (config.apiKey !== undefined) return { apiKey: config.apiKey };
  return isAnthropicApi(config.baseUrl) ? {} : { apiKey: null };
}

/** Whether `url` is Anthropic's own API, the only place an ambient Anthropic credential may go. */
export function isAnthropicApi(url: string): boolean {
  try {
    const parsed = new URL(url);
    return parsed.protocol === "https:" && parsed.hostname === ANTHROPIC_API_HOST && parsed.port === "";
  } catch {
    return false;
  }
}

const ANTHROPIC_API_HOST = "api.anthropic.com";

function cachedFactory(
  build: (model: string, sampling: MappedSampling, config: BackendClientConfig) => LLMClient,
  defaultModel: string | undefined,
): BackendClientFactory {
  const cache = new Map<string, LLMClient>();
  return (call, config) => {
    const model = call.model ?? defaultModel;
    if (model === undefined) {
      throw new ProxyHttpError(
        400,
        ProxyErrorKind.INVALID_REQUEST,
        "model: this backend needs a model name",
        {
          param: "model",
        },
      );
    }
    const sampling = samplingFromBody(call.extraBody);
    const key = `${model}\u0000${JSON.stringify(sampling)}`;
    let client = cache.get(key);
    if (!client) {
      client = build(model, sampling, config);
      if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
      cache.set(key, client);
    }
    return client;
  };
}
