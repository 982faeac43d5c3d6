/**
 * `forge-guardrails/clients`: the HTTP clients, for OpenAI-compatible servers (llama-server, llamafile,
 * vLLM) and Ollama, and `EndpointPool` over several of them. The in-process engine is
 * `forge-guardrails/llama-cpp`, Anthropic `forge-guardrails/anthropic`.
 */
export { BAD_RESPONSE_STATUS, TIMEOUT_STATUS, UNREACHABLE_STATUS } from "./http.ts";
export {
  createLlamaServerTokenizer,
  type LlamaServerTokenizerOptions,
  type PromptTokenizer,
} from "./llama-server/tokenizer.ts";
export { OllamaClient, type OllamaClientOptions } from "./ollama/client.ts";
export { isKnownThinkingModel } from "./ollama/wire.ts";
export {
  OpenAICompatibleClient,
  type OpenAICompatibleClientOptions,
  type ToolCallingMode,
} from "./openai/compatible-client.ts";
export {
  type EndpointConfig,
  EndpointPool,
  EndpointPoolClosedError,
  EndpointPoolConfigError,
  type EndpointPoolOptions,
  type EndpointStatus,
  EndpointsUnavailableError,
  type PoolEndpointKind,
  type PoolEndpointOptions,
} from "./pool/pool.ts";
export { toPromptModeMessages } from "./prompt-mode.ts";
export { resolveReasoning, type SplitReasoning, splitReasoning } from "./reasoning.ts";
export type { RetryOptions, RetryPolicy } from "./retry.ts";
export {
  getSamplingDefaults,
  knownSamplingFamilies,
  normalizeModelName,
  type ResolveSamplingOptions,
  resolveSampling,
  type SamplingParams,
} from "./sampling.ts";
