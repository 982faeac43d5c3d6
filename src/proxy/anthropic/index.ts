/** The Anthropic Messages dialect of the proxy (`POST /v1/messages`, `/v1/messages/count_tokens`): conversion, rendering, token counts. */
export { createTokenCounter, TOKEN_COUNT_HEADER, type TokenCounter } from "./count-tokens.ts";
export { MessageStreamWriter, renderMessage, renderMessageStream } from "./render.ts";
export { proxyRequestFromAnthropic } from "./request.ts";
export { countTokensRequestSchema, messagesRequestSchema } from "./schema.ts";
