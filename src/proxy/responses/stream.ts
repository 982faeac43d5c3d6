/**
 * A `ProxyAnswer` as the Responses SSE stream, live text as it comes (ADR 014) and the rest once
 * validated: `response.created`, `response.in_progress`, each output item from `output_item.added`
 * through its content or arguments events to `output_item.done`, then `response.completed` with
 * usage. Each event is `event: <type>` plus its JSON, with `type` and a `sequence_number`.
 */
import type { ProxyAnswer } from "../answer.ts";
import { errorBody, type ProxyHttpError } from "../errors.ts";
import type { StreamWriter } from "../live-response.ts";
import { randomId } from "../proxy-request.ts";
import { newResponseIdentity, type OutputItem, outputItemsOf, outputText, responseObject } from "./render.ts";
import type { ResponseEcho } from "./request.ts";

/**
 * A Responses event stream written as the answer comes: `response.created` and `in_progress`,
 * live text in a first `message` item (`text`), then the rest of the validated answer (`finish`):
 * the text not sent yet, the other items, `response.completed`; or an `error` event (`fail`).
 */
export class ResponseStreamWriter implements StreamWriter {
  readonly #identity = newResponseIdentity();
  readonly #echo: ResponseEcho;
  readonly #model: string;
  #sequence = 0;
  /** The message item live text went into, once the first piece came. */
  #liveItemId: string | undefined;

  constructor(model: string, echo: ResponseEcho) {
    this.#model = model;
    this.#echo = echo;
  }

  start(): string {
    const pending: ProxyAnswer = {
      model: this.#model,
      content: "",
      toolCalls: [],
      reasoning: undefined,
      finishReason: "stop",
      usage: { promptTokens: 0, completionTokens: 0 },
    };
    const inProgress = responseObject(pending, this.#echo, this.#identity, null);
    return (
      this.#emit("response.created", { response: inProgress }) +
      this.#emit("response.in_progress", { response: inProgress })
    );
  }

  /** A piece of live text, in a message item at output index 0 (opened by the first piece). */
  text(delta: string): string {
    let body = "";
    if (this.#liveItemId === undefined) {
      const id = randomId("msg_");
      this.#liveItemId = id;
      const item = { type: "message", id, role: "assistant", status: "in_progress", content: [] };
      body += this.#emit("response.output_item.added", { output_index: 0, item });
      body += this.#emit("response.content_part.added", {
        item_id: id,
        output_index: 0,
        content_index: 0,
        part: outputText(""),
      });
    }
    return (
      body +
      this.#emit("response.output_text.delta", {
        item_id: this.#liveItemId,
        output_index: 0,
        content_index: 0,
        delta,
        logprobs: [],
      })
    );
  }

  /** The rest of `answer` after the live text `sent`, then `response.completed`. */
  finish(answer: ProxyAnswer, sent = ""): string {
    let output = outputItemsOf(answer, this.#echo);
    let body = "";
    const liveId = this.#liveItemId;
    if (liveId !== undefined) {
      // The live message comes first; the other items follow it.
      const message = output.find((item) => item.type === "message");
      const live: OutputItem = {
        type: "message",
        id: liveId,
        role: "assistant",
        status: "completed",
        content: [outputText(answer.content)],
      };
      output = [live, ...output.filter((item) => item !== message)];
      const part = { item_id: liveId, output_index: 0, content_index: 0 };
      const rest = answer.content.slice(sent.length);
      if (rest.length > 0)
        body += this.#emit("response.output_text.delta", { ...part, delta: rest, logprobs: [] });
      body += this.#emit("response.output_text.done", { ...part, text: answer.content, logprobs: [] });
      body += this.#emit("response.content_part.done", { ...part, part: outputText(answer.content) });
      body += this.#emit("response.output_item.done", { output_index: 0, item: live });
    }
    output.forEach((item, outputIndex) => {
      if (item.id === liveId) return;
      body += this.#emit("response.output_item.added", { output_index: outputIndex, item: startOf(item) });
      for (const [type, data] of itemEvents(item))
        body += this.#emit(type, { item_id: item.id, output_index: outputIndex, ...data });
      body += this.#emit("response.output_item.done", { output_index: outputIndex, item });
    });
    return (
      body +
      this.#emit("response.completed", {
        response: responseObject(answer, this.#echo, this.#identity, output),
      })
    );
  }

  /** The last event of a stream that failed after it began: Responses' `error` event. */
  fail(error: ProxyHttpError): string {
    const { error: detail } = errorBody("openai", error) as { error: Record<string, unknown> };
    return this.#emit("error", {
      code: detail.code ?? null,
      message: detail.message ?? error.message,
      param: detail.param ?? null,
    });
  }

  #emit(type: string, data: Record<string, unknown>): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.#sequence++, ...data })}\n\n`;
  }
}

/** An item as `output_item.added` announces it: in progress, before its text or arguments. */
function startOf(item: OutputItem): Record<string, unknown> {
  switch (item.type) {
    case "reasoning":
    case "message":
      return { ...item, status: "in_progress", content: [] };
    case "function_call":
      return { ...item, status: "in_progress", arguments: "" };
  }
}

type ItemEvent = [type: string, data: Record<string, unknown>];

/** The events between an item's `added` and `done`: its one content part, or its arguments. */
function itemEvents(item: OutputItem): ItemEvent[] {
  switch (item.type) {
    case "message": {
      const text = item.content[0]?.text ?? "";
      const part = { content_index: 0 };
      return [
        ["response.content_part.added", { ...part, part: outputText("") }],
        ["response.output_text.delta", { ...part, delta: text, logprobs: [] }],
        ["response.output_text.done", { ...part, text, logprobs: [] }],
        ["response.content_part.done", { ...part, part: outputText(text) }],
      ];
    }
    case "reasoning": {
      const text = item.content[0]?.text ?? "";
      const part = { content_index: 0 };
      return [
        ["response.content_part.added", { ...part, part: { type: "reasoning_text", text: "" } }],
        ["response.reasoning_text.delta", { ...part, delta: text }],
        ["response.reasoning_text.done", { ...part, text }],
        ["response.content_part.done", { ...part, part: { type: "reasoning_text", text } }],
      ];
    }
    case "function_call":
      return [
        ["response.function_call_arguments.delta", { delta: item.arguments }],
        ["response.function_call_arguments.done", { name: item.name, arguments: item.arguments }],
      ];
  }
}
