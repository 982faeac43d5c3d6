/**
 * `forge-guardrails/clients`: the HTTP clients, for OpenAI-compatible servers (llama-server, llamafile,
 * vLLM) and Ollama, and `EndpointPool` over several of them. The in-process engine is
 * `forge-guardrails/llama-cpp`, Anthropic `forge-guardrails/anthropic`.
 */

export { BAD_RESPONSE_STATUS, TIMEOUT_STATUS, UNREACHABLE_STATUS } from "./http.ts";
export * from "./llama-server/index.ts";
export * from "./ollama/index.ts";
export * from "./openai/index.ts";
export * from "./pool/index.ts";
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
