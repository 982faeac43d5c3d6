/** `forge-guardrails/anthropic`: AnthropicClient over the official `@anthropic-ai/sdk`. */
export { AnthropicClient, type AnthropicClientOptions } from "./client.ts";
export { type AnthropicConversation, toAnthropicMessages, UNANSWERED_TOOL_RESULT } from "./messages.ts";
export type { AnthropicUsage } from "./wire.ts";
