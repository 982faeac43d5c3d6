/**
 * The API-neutral answer to one request, built from the validated batch: a `respond` call turns
 * back into plain text (finish "stop"), real calls go back for the client to execute.
 */

import { estimateTokensByChars, MESSAGE_OVERHEAD_TOKENS } from "../context/index.ts";
import { type Message, serializeHistory } from "../core/messages.ts";
import type { LLMResponse, ToolCall } from "../core/types.ts";
import { RESPOND_TOOL_NAME } from "../tools/respond.ts";
import { randomId } from "./proxy-request.ts";

/** A tool call handed back to the client. */
export interface AnswerToolCall {
  id: string;
  name: string;
  args: Record<string, unknown>;
}

/** What the proxy answers, before it is rendered in an API's shape. */
export interface ProxyAnswer {
  model: string;
  /** Assistant text: the `respond` message, or the model's plain answer. */
  content: string;
  toolCalls: AnswerToolCall[];
  /** The model's reasoning that came with the calls, when it gave any. */
  reasoning: string | undefined;
  finishReason: "stop" | "tool_calls";
  /** Estimated (characters / 4): the backend's own counts do not survive validation and retries. */
  usage: { promptTokens: number; completionTokens: number };
  /** The guardrail gave up: the model kept answering prose after the nudges, and `content` is that prose. */
  gaveUp?: boolean;
}

/**
 * Build the answer from a validated batch. When the proxy injected `respond`, its calls become
 * the text; any other call is returned as a tool call for the client.
 */
export function answerFromCalls(
  calls: readonly ToolCall[],
  options: { model: string; respondInjected: boolean; idPrefix: string; prompt: readonly Message[] },
): ProxyAnswer {
  const texts: string[] = [];
  const toolCalls: AnswerToolCall[] = [];
  const reasoning: string[] = [];
  for (const call of calls) {
    if (call.reasoning) reasoning.push(call.reasoning);
    if (options.respondInjected && call.tool === RESPOND_TOOL_NAME) {
      const message = call.args.message;
      texts.push(typeof message === "string" ? message : JSON.stringify(message ?? ""));
    } else {
      toolCalls.push({ id: randomId(options.idPrefix), name: call.tool, args: call.args });
    }
  }
  const content = texts.join("\n\n");
  return {
    model: options.model,
    content,
    toolCalls,
    reasoning: reasoning.length > 0 ? reasoning.join("\n\n") : undefined,
    finishReason: toolCalls.length > 0 ? "tool_calls" : "stop",
    usage: estimateUsage(options.prompt, content, toolCalls),
  };
}

/** The answer to a request without tools: whatever the model said. */
export function answerFromResponse(
  response: LLMResponse,
  options: { model: string; idPrefix: string; prompt: readonly Message[] },
): ProxyAnswer {
  if (Array.isArray(response)) return answerFromCalls(response, { ...options, respondInjected: false });
  return {
    model: options.model,
    content: response.content,
    toolCalls: [],
    reasoning: undefined,
    finishReason: "stop",
    usage: estimateUsage(options.prompt, response.content, []),
  };
}

function estimateUsage(
  prompt: readonly Message[],
  content: string,
  toolCalls: readonly AnswerToolCall[],
): ProxyAnswer["usage"] {
  let promptTokens = 0;
  // Reported usage: the template's per-message wrapping counts too.
  for (const message of prompt) promptTokens += estimateTokensByChars(message) + MESSAGE_OVERHEAD_TOKENS;
  const callChars = toolCalls.length > 0 ? JSON.stringify(toolCalls).length : 0;
  return { promptTokens, completionTokens: Math.ceil((content.length + callChars) / 4) };
}

/** The history as an OpenAI-format wire list (for backends reached without the guardrail path). */
export function wireHistory(messages: readonly Message[]): Record<string, unknown>[] {
  return serializeHistory(messages, "openai");
}
