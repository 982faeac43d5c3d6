/**
 * A `ProxyAnswer` as OpenAI's `chat.completion.chunk` SSE stream ending in `data: [DONE]`: live
 * text as it comes (ADR 014), the rest once validated.
 */
import type { ProxyAnswer } from "../answer.ts";
import type { ProxyHttpError } from "../errors.ts";
import type { StreamWriter } from "../live-response.ts";
import { randomId } from "../proxy-request.ts";
import { sseErrorEvent } from "../stream-error.ts";
import { usageOf } from "./render.ts";

/**
 * A `chat.completion.chunk` stream written as the answer comes: the role chunk, live text
 * (`text`), then the rest of the validated answer (`finish`), or an error event (`fail`).
 */
export class ChatCompletionStreamWriter implements StreamWriter {
  readonly #base: Record<string, unknown>;
  readonly #includeUsage: boolean;

  constructor(model: string, options: { includeUsage: boolean }) {
    this.#base = {
      id: randomId("chatcmpl-"),
      object: "chat.completion.chunk",
      created: Math.floor(Date.now() / 1000),
      model,
    };
    this.#includeUsage = options.includeUsage;
  }

  /** The first chunk: the assistant's role. */
  start(): string {
    return this.#chunk({ role: "assistant", content: "" });
  }

  /** A piece of live text. */
  text(delta: string): string {
    return this.#chunk({ content: delta });
  }

  /**
   * The rest of `answer` after the live text `sent` (its reasoning, the text not sent yet, one
   * chunk per tool call), the finish reason, usage when asked, and `[DONE]`.
   */
  finish(answer: ProxyAnswer, sent = ""): string {
    let body = "";
    if (answer.reasoning !== undefined) body += this.#chunk({ reasoning_content: answer.reasoning });
    const rest = answer.content.slice(sent.length);
    if (rest.length > 0) body += this.#chunk({ content: rest });
    answer.toolCalls.forEach((call, index) => {
      body += this.#chunk({
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
    body += this.#chunk({}, answer.finishReason);
    if (this.#includeUsage) {
      body += `data: ${JSON.stringify({ ...this.#base, choices: [], usage: usageOf(answer) })}\n\n`;
    }
    return `${body}data: [DONE]\n\n`;
  }

  /** The last event of a stream that failed after it began. */
  fail(error: ProxyHttpError): string {
    return sseErrorEvent("openai", error);
  }

  #chunk(delta: Record<string, unknown>, finishReason: string | null = null): string {
    const choices = [{ index: 0, delta, logprobs: null, finish_reason: finishReason }];
    return `data: ${JSON.stringify({ ...this.#base, choices })}\n\n`;
  }
}
