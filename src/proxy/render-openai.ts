/**
 * A `ProxyAnswer` in OpenAI's shapes: a `chat.completion` object, or the `chat.completion.chunk`
 * SSE stream ending in `data: [DONE]` (produced after validation, so every chunk is final).
 */
import type { ProxyAnswer } from "./answer.ts";
import { randomId } from "./proxy-request.ts";

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

/** The whole SSE body of a streamed answer: role, content, one chunk per tool call, finish, `[DONE]`. */
export function renderChatCompletionStream(answer: ProxyAnswer, options: { includeUsage: boolean }): string {
  const base = {
    id: randomId("chatcmpl-"),
    object: "chat.completion.chunk",
    created: Math.floor(Date.now() / 1000),
    model: answer.model,
  };
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) =>
    `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] })}\n\n`;
  let body = chunk({ role: "assistant", content: "" });
  if (answer.reasoning !== undefined) body += chunk({ reasoning_content: answer.reasoning });
  if (answer.content.length > 0) body += chunk({ content: answer.content });
  answer.toolCalls.forEach((call, index) => {
    body += chunk({
      tool_calls: [
        {
          index,
          id: call.id,
          type: "function",
          function: { name: call.name, arguments: JSON.stringify(call.args) },
        },
      ],
    });
  });
  body += chunk({}, answer.finishReason);
  if (options.includeUsage) {
    body += `data: ${JSON.stringify({ ...base, choices: [], usage: usageOf(answer) })}\n\n`;
  }
  return `${body}data: [DONE]\n\n`;
}

function usageOf(answer: ProxyAnswer): Record<string, number> {
  const { promptTokens, completionTokens } = answer.usage;
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
  };
}
