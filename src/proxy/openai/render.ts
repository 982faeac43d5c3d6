/** A `ProxyAnswer` as OpenAI's non-streaming `chat.completion` object. */
import type { ProxyAnswer } from "../answer.ts";
import { randomId } from "../proxy-request.ts";
/** The non-streaming `chat.completion` body. */
export function renderChatCompletion(answer: ProxyAnswer): Record<string, unknown> {
  const message: Record<string, unknown> = {
    role: "assistant",
    content: answer.toolCalls.length > 0 && answer.content.length === 0 ? null : answer.content,
  };
  if (answer.toolCalls.length > 0) {
    message.tool_calls = answer.toolCalls.map((call) => ({
      id: call.id,
      type: "function",
      function: { name: call.name, arguments: JSON.stringify(call.args) },
    }));
  }
  if (answer.reasoning !== undefined) message.reasoning_content = answer.reasoning;
  return {
    id: randomId("chatcmpl-"),
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: answer.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: answer.finishReason }],
    usage: usageOf(answer),
  };
}

/** The `usage` object of an answer, as the body and the stream's last chunk carry it. */
export function usageOf(answer: ProxyAnswer): Record<string, number> {
  const { promptTokens, completionTokens } = answer.usage;
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
  };
}
