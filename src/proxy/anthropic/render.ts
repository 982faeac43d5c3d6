/** A `ProxyAnswer` as Anthropic's non-streaming `message` object. */
import type { ProxyAnswer } from "../answer.ts";
import { randomId } from "../proxy-request.ts";

/** One content block of an answer: its text, or a tool call. */
export type Block =
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };

/** The non-streaming `message` body. */
export function renderMessage(answer: ProxyAnswer): Record<string, unknown> {
  return {
    id: randomId("msg_"),
    type: "message",
    role: "assistant",
    model: answer.model,
    content: blocksOf(answer),
    stop_reason: stopReasonOf(answer),
    stop_sequence: null,
    usage: { input_tokens: answer.usage.promptTokens, output_tokens: answer.usage.completionTokens },
  };
}

/** The answer's blocks: its text (when any, or nothing else to say), then one `tool_use` per call. */
export function blocksOf(answer: ProxyAnswer): Block[] {
  const blocks: Block[] = [];
  if (answer.content.length > 0 || answer.toolCalls.length === 0) {
    blocks.push({ type: "text", text: answer.content });
  }
  for (const call of answer.toolCalls) {
    blocks.push({ type: "tool_use", id: call.id, name: call.name, input: call.args });
  }
  return blocks;
}

/** `tool_use` when the answer calls tools, else `end_turn`. */
export function stopReasonOf(answer: ProxyAnswer): "end_turn" | "tool_use" {
  return answer.finishReason === "tool_calls" ? "tool_use" : "end_turn";
}
