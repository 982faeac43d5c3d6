/**
 * A `ProxyAnswer` in Anthropic's shapes: a `message` object, or the SSE stream from
 * `message_start` to `message_stop` (produced after validation, so every event is final).
 */
import type { ProxyAnswer } from "./answer.ts";
import { randomId } from "./proxy-request.ts";

type Block =
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

/** The whole SSE body of a streamed answer, one `event:`/`data:` pair per Anthropic event. */
export function renderMessageStream(answer: ProxyAnswer): string {
  const event = (type: string, data: Record<string, unknown>) =>
    `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  let body = event("message_start", {
    message: {
      id: randomId("msg_"),
      type: "message",
      role: "assistant",
      model: answer.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: answer.usage.promptTokens, output_tokens: 0 },
    },
  });
  blocksOf(answer).forEach((block, index) => {
    if (block.type === "text") {
      body += event("content_block_start", { index, content_block: { type: "text", text: "" } });
      body += event("content_block_delta", { index, delta: { type: "text_delta", text: block.text } });
    } else {
      body += event("content_block_start", {
        index,
        content_block: { type: "tool_use", id: block.id, name: block.name, input: {} },
      });
      body += event("content_block_delta", {
        index,
        delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) },
      });
    }
    body += event("content_block_stop", { index });
  });
  body += event("message_delta", {
    delta: { stop_reason: stopReasonOf(answer), stop_sequence: null },
    usage: { output_tokens: answer.usage.completionTokens },
  });
  return body + event("message_stop", {});
}

function blocksOf(answer: ProxyAnswer): Block[] {
  const blocks: Block[] = [];
  if (answer.content.length > 0 || answer.toolCalls.length === 0) {
    blocks.push({ type: "text", text: answer.content });
  }
  for (const call of answer.toolCalls) {
    blocks.push({ type: "tool_use", id: call.id, name: call.name, input: call.args });
  }
  return blocks;
}

function stopReasonOf(answer: ProxyAnswer): "end_turn" | "tool_use" {
  return answer.finishReason === "tool_calls" ? "tool_use" : "end_turn";
}
