/**
 * A `ProxyAnswer` as the Responses SSE stream, produced after validation (so every event is
 * final): `response.created`, `response.in_progress`, each output item from `output_item.added`
 * through its content or arguments events to `output_item.done`, then `response.completed` with
 * usage. Each event is `event: <type>` plus its JSON, with `type` and a `sequence_number`.
 */
import type { ProxyAnswer } from "../answer.ts";
import { newResponseIdentity, type OutputItem, outputItemsOf, outputText, responseObject } from "./render.ts";
import type { ResponseEcho } from "./request.ts";

/** The whole SSE body of a streamed answer. */
export function renderResponseStream(answer: ProxyAnswer, echo: ResponseEcho): string {
  const identity = newResponseIdentity();
  const output = outputItemsOf(answer, echo);
  let sequence = 0;
  let body = "";
  const emit = (type: string, data: Record<string, unknown>) => {
    body += `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...data })}\n\n`;
  };
  const inProgress = responseObject(answer, echo, identity, null);
  emit("response.created", { response: inProgress });
  emit("response.in_progress", { response: inProgress });
  output.forEach((item, outputIndex) => {
    emit("response.output_item.added", { output_index: outputIndex, item: startOf(item) });
    for (const [type, data] of itemEvents(item))
      emit(type, { item_id: item.id, output_index: outputIndex, ...data });
    emit("response.output_item.done", { output_index: outputIndex, item });
  });
  emit("response.completed", { response: responseObject(answer, echo, identity, output) });
  return body;
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
