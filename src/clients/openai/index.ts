/** The OpenAI-compatible client (llama-server, llamafile, vLLM): native tool calls, prompt-mode fallback, streaming. */
export {
  OpenAICompatibleClient,
  type OpenAICompatibleClientOptions,
  type ToolCallingMode,
} from "./compatible-client.ts";
