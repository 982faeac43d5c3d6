/** The OpenAI Chat Completions dialect of the proxy (`POST /v1/chat/completions`): request conversion and rendering. */
export {
  ChatCompletionStreamWriter,
  renderChatCompletion,
  renderChatCompletionStream,
} from "./render.ts";
export { openAIRequestHasTools, proxyRequestFromOpenAI } from "./request.ts";
export { chatCompletionRequestSchema, TOOL_NAME_PATTERN } from "./schema.ts";
