/**
 * A `ProxyAnswer` as Anthropic's SSE stream from `message_start` to `message_stop`: live text as
 * it comes (ADR 014), the rest once validated.
 */
import type { ProxyAnswer } from "../answer.ts";
import type { ProxyHttpError } from "../errors.ts";
import type { StreamWriter } from "../live-response.ts";
import { randomId } from "../proxy-request.ts";
import { sseErrorEvent } from "../stream-error.ts";
import { blocksOf, stopReasonOf } from "./render.ts";

/**
 * An Anthropic Messages event stream written as the answer comes: `message_start`, live text in
 * the first `text` block (`text`), then the rest of the validated answer (`finish`): the text not
 * sent yet, its `tool_use` blocks, `message_delta` and `message_stop`; or an `error` event (`fail`).
 */
export class MessageStreamWriter implements StreamWriter {
  readonly #model: string;
  readonly #promptTokens: number;
  #textOpen = false;

  constructor(model: string, promptTokens: number) {
    this.#model = model;
    this.#promptTokens = promptTokens;
  }

  start(): string {
    return event("message_start", {
      message: {
        id: randomId("msg_"),
        type: "message",
        role: "assistant",
        model: this.#model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: this.#promptTokens, output_tokens: 0 },
      },
    });
  }

  /** A piece of live text, in the first block (opened by the first piece). */
  text(delta: string): string {
    let body = "";
    if (!this.#textOpen) {
      this.#textOpen = true;
      body += event("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
    }
    return body + event("content_block_delta", { index: 0, delta: { type: "text_delta", text: delta } });
  }

  /** The rest of `answer` after the live text `sent`, then `message_delta` and `message_stop`. */
  finish(answer: ProxyAnswer, sent = ""): string {
    let body = "";
    let blocks = blocksOf(answer);
    if (this.#textOpen) {
      const rest = answer.content.slice(sent.length);
      if (rest.length > 0) {
        body += event("content_block_delta", { index: 0, delta: { type: "text_delta", text: rest } });
      }
      body += event("content_block_stop", { index: 0 });
      blocks = blocks.filter((block) => block.type !== "text");
    }
    const offset = this.#textOpen ? 1 : 0;
    blocks.forEach((block, position) => {
      const index = position + offset;
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
      usage: { input_tokens: answer.usage.promptTokens, output_tokens: answer.usage.completionTokens },
    });
    return body + event("message_stop", {});
  }

  /** The last event of a stream that failed after it began. */
  fail(error: ProxyHttpError): string {
    return sseErrorEvent("anthropic", error);
  }
}

function event(type: string, data: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}
