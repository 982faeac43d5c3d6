/**
 * A `ProxyAnswer` as a Responses `response` object: output items in the order the model produced
 * them (its reasoning, its message, its function calls), with usage, and the request's settings
 * echoed back as OpenAI's API does.
 */
import type { ProxyAnswer } from "../answer.ts";
import { randomId } from "../proxy-request.ts";
import type { ResponseEcho } from "./request.ts";

/** One output item: `reasoning`, `message` (one `output_text` part) or `function_call`. */
export type OutputItem =
  | {
      type: "reasoning";
      id: string;
      summary: [];
      content: { type: "reasoning_text"; text: string }[];
      status: "completed";
    }
  | {
      type: "message";
      id: string;
      role: "assistant";
      status: "completed";
      content: OutputText[];
    }
  | {
      type: "function_call";
      id: string;
      call_id: string;
      name: string;
      arguments: string;
      status: "completed";
      namespace?: string;
    };

/** An `output_text` content part. */
export interface OutputText {
  type: "output_text";
  text: string;
  annotations: [];
  logprobs: [];
}

/** The output items of an answer; a message whenever there is text, or nothing else to say. */
export function outputItemsOf(answer: ProxyAnswer, echo: ResponseEcho): OutputItem[] {
  const items: OutputItem[] = [];
  if (answer.reasoning !== undefined) {
    items.push({
      type: "reasoning",
      id: randomId("rs_"),
      summary: [],
      content: [{ type: "reasoning_text", text: answer.reasoning }],
      status: "completed",
    });
  }
  if (answer.content.length > 0 || answer.toolCalls.length === 0) {
    items.push({
      type: "message",
      id: randomId("msg_"),
      role: "assistant",
      status: "completed",
      content: [outputText(answer.content)],
    });
  }
  for (const call of answer.toolCalls) {
    const namespace = echo.namespaces.get(call.name);
    items.push({
      type: "function_call",
      id: randomId("fc_"),
      call_id: call.id,
      name: call.name,
      arguments: JSON.stringify(call.args),
      status: "completed",
      ...(namespace !== undefined && { namespace }),
    });
  }
  return items;
}

/** An `output_text` part holding `text`. */
export function outputText(text: string): OutputText {
  return { type: "output_text", text, annotations: [], logprobs: [] };
}

/** The identity of one response: its id and creation time, shared by all its stream events. */
export interface ResponseIdentity {
  id: string;
  createdAt: number;
}

/** A fresh response identity. */
export function newResponseIdentity(): ResponseIdentity {
  return { id: randomId("resp_"), createdAt: Math.floor(Date.now() / 1000) };
}

/**
 * The `response` object: `completed` with its output and usage, or (for the first stream events)
 * `in_progress` with neither.
 */
export function responseObject(
  answer: ProxyAnswer,
  echo: ResponseEcho,
  identity: ResponseIdentity,
  output: OutputItem[] | null,
): Record<string, unknown> {
  const done = output !== null;
  const { promptTokens, completionTokens } = answer.usage;
  return {
    id: identity.id,
    object: "response",
    created_at: identity.createdAt,
    status: done ? "completed" : "in_progress",
    completed_at: done ? Math.floor(Date.now() / 1000) : null,
    error: null,
    incomplete_details: null,
    instructions: echo.instructions,
    max_output_tokens: echo.maxOutputTokens,
    model: answer.model,
    output: output ?? [],
    parallel_tool_calls: echo.parallelToolCalls,
    previous_response_id: null,
    reasoning: null,
    store: false,
    temperature: echo.temperature,
    text: echo.text,
    tool_choice: echo.toolChoice,
    tools: echo.tools,
    top_p: echo.topP,
    truncation: "disabled",
    usage: done
      ? {
          input_tokens: promptTokens,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: completionTokens,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: promptTokens + completionTokens,
        }
      : null,
    metadata: echo.metadata,
  };
}

/** The non-streaming answer: a completed `response` object. */
export function renderResponse(answer: ProxyAnswer, echo: ResponseEcho): Record<string, unknown> {
  return responseObject(answer, echo, newResponseIdentity(), outputItemsOf(answer, echo));
}
