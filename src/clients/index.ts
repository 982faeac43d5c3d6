/** LLM clients: OpenAI-compatible servers (llama-server, llamafile, vLLM), Ollama and Anthropic. */
export { AnthropicClient, type AnthropicClientOptions } from "./anthropic-client.ts";
export {
  type AnthropicConversation,
  toAnthropicMessages,
  UNANSWERED_TOOL_RESULT,
} from "./anthropic-messages.ts";
export type { AnthropicUsage } from "./anthropic-wire.ts";
export { BAD_RESPONSE_STATUS, TIMEOUT_STATUS, UNREACHABLE_STATUS } from "./http.ts";
export {
  LlamaCppClient,
  type LlamaCppClientOptions,
  type LlamaCppMode,
  type LlamaCppModelInfo,
  type LlamaCppUsage,
  ModelNotFoundError,
} from "./llama-cpp.ts";
export { OllamaClient, type OllamaClientOptions } from "./ollama-client.ts";
export { isKnownThinkingModel } from "./ollama-wire.ts";
export {
  OpenAICompatibleClient,
  type OpenAICompatibleClientOptions,
  type ToolCallingMode,
} from "./openai-compatible-client.ts";
export { toPromptModeMessages } from "./prompt-mode.ts";
export { resolveReasoning, type SplitReasoning, splitReasoning } from "./reasoning.ts";
export {
  getSamplingDefaults,
  knownSamplingFamilies,
  normalizeModelName,
  type ResolveSamplingOptions,
  resolveSampling,
  type SamplingParams,
} from "./sampling.ts";
