/** The Anthropic Messages dialect of the proxy (`POST /v1/messages`, `/v1/messages/count_tokens`). */
import type { Dialect } from "../dialect.ts";
import { renderMessage } from "./render.ts";
import { convertAnthropic } from "./request.ts";
import { type MessagesRequest, messagesRequestSchema } from "./schema.ts";
import { MessageStreamWriter } from "./stream.ts";

export { createTokenCounter, TOKEN_COUNT_HEADER, type TokenCounter } from "./count-tokens.ts";
export { convertAnthropic } from "./request.ts";
export { countTokensRequestSchema } from "./schema.ts";

/** Anthropic Messages in and out, an OpenAI-compatible backend behind: always the guarded path. */
export const anthropicDialect: Dialect<MessagesRequest, undefined> = {
  path: "/v1/messages",
  schema: messagesRequestSchema,
  convert: convertAnthropic,
  render: (answer) => renderMessage(answer),
  createStreamWriter: (model, _echo, promptTokens) => new MessageStreamWriter(model, promptTokens),
};
