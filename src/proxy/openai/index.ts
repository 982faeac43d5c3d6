/** The OpenAI Chat Completions dialect of the proxy (`POST /v1/chat/completions`). */
import type { Dialect } from "../dialect.ts";
import { renderChatCompletion } from "./render.ts";
import { convertOpenAI, type OpenAIEcho, openAIRequestHasTools } from "./request.ts";
import { type ChatCompletionRequest, chatCompletionRequestSchema } from "./schema.ts";
import { ChatCompletionStreamWriter } from "./stream.ts";

/** Chat completions: without tools (or with `tool_choice: "none"`) there is nothing to guard. */
export const openAIDialect: Dialect<ChatCompletionRequest, OpenAIEcho> = {
  path: "/v1/chat/completions",
  schema: chatCompletionRequestSchema,
  convert: convertOpenAI,
  render: (answer) => renderChatCompletion(answer),
  createStreamWriter: (model, echo) => new ChatCompletionStreamWriter(model, echo),
  passesThrough: (body) => !openAIRequestHasTools(body),
};
