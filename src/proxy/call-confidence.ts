/**
 * The call-confidence gate (docs/decisions/040-call-confidence.md): under `tool_choice: auto`, a
 * call the rescue read from the text of a first answer is taken only when the model itself was at
 * least `threshold` likely to start a call there. The proxy asks the backend for the first token
 * of the client's own prompt (`logprobs`, one token; the client's tools, without the `respond` the
 * proxy added, whose call opens like any other) and adds up the probability of the tokens that open
 * a call. A call the model was more likely not to write is declined, and the request is answered
 * in text.
 */

import type { TokenChoice } from "../clients/openai/chat-exchange.ts";
import type { ToolSpec } from "../core/tools.ts";
import type { LLMClient, LLMResponse, SendOptions, StreamChunk } from "../core/types.ts";
import type { TemplateCallFormat } from "../prompts/chat-template.ts";

/** How many first-token alternatives the probe asks for (OpenAI allows at most 20). */
export const FIRST_TOKEN_ALTERNATIVES = 20;

/** Text a call opens with, in the formats the rescue reads (ADR 010) and the templates write. */
const CALL_OPENINGS = ["```", "{", "[", "<tool_call>", "<function", "[TOOL_CALLS]", "<|python_tag|>"];

/** A client that can tell the model's likeliest first tokens for a prompt (the proxy's `ForwardingChatClient`). */
export interface FirstTokenSource {
  firstTokens(
    messages: Record<string, unknown>[],
    tools: ToolSpec[],
    options: { top: number; signal?: AbortSignal | undefined },
  ): Promise<TokenChoice[] | null>;
}

/** Whether `client` can be asked for first-token probabilities. */
export function hasFirstTokens(client: LLMClient): client is LLMClient & FirstTokenSource {
  return typeof (client as Partial<FirstTokenSource>).firstTokens === "function";
}

/**
 * The backend's own client with the last prompt it was sent kept, so the probe asks exactly what
 * the model answered (after compaction and narrowing, which sit above it).
 */
export class LastPromptClient implements LLMClient {
  readonly #inner: LLMClient & FirstTokenSource;
  #last: { messages: Record<string, unknown>[]; tools: ToolSpec[] } | null = null;

  constructor(inner: LLMClient & FirstTokenSource) {
    this.#inner = inner;
  }

  get apiFormat() {
    return this.#inner.apiFormat;
  }

  send(
    messages: Record<string, unknown>[],
    tools: ToolSpec[] = [],
    options?: SendOptions,
  ): Promise<LLMResponse> {
    this.#last = { messages, tools };
    return this.#inner.send(messages, tools, options);
  }

  sendStream(
    messages: Record<string, unknown>[],
    tools: ToolSpec[] = [],
    options?: SendOptions,
  ): AsyncIterable<StreamChunk> {
    this.#last = { messages, tools };
    return this.#inner.sendStream(messages, tools, options);
  }

  getContextLength(): Promise<number | null> {
    return this.#inner.getContextLength();
  }

  /**
   * The first-token alternatives of the last prompt sent, asked without the tools named in
   * `without` (the proxy's own `respond`); `null` before any prompt, or when the backend reports none.
   */
  async lastPromptFirstTokens(
    signal: AbortSignal,
    without: readonly string[] = [],
  ): Promise<TokenChoice[] | null> {
    if (this.#last === null) return null;
    const tools = this.#last.tools.filter((tool) => !without.includes(tool.name));
    return this.#inner.firstTokens(this.#last.messages, tools, { top: FIRST_TOKEN_ALTERNATIVES, signal });
  }
}

/**
 * Whether a text answer opens with a call (after white space): call markup, a fence, a JSON object
 * or list, or the template's own opening. Only such an answer is gated: its first token is the
 * call's, so the first token's probability is the model's belief in calling. An answer that opens
 * with prose and then calls is taken as it is.
 */
export function opensWithCall(text: string, callFormat?: TemplateCallFormat): boolean {
  const start = text.trimStart();
  if (start.length === 0) return false;
  return openings(callFormat).some((opening) => start.startsWith(opening));
}

/**
 * The probability that the model opens its answer with a call: the sum over the first-token
 * alternatives that open one (a call opening, or a start of the answer it wrote, which opens one).
 * @example callStartProbability([{ token: "```", probability: 0.3 }, { token: "The", probability: 0.6 }], "```json\n{}") // 0.3
 */
export function callStartProbability(
  choices: readonly TokenChoice[],
  answer: string,
  callFormat?: TemplateCallFormat,
): number {
  const start = answer.trimStart();
  const opening = openings(callFormat);
  let total = 0;
  for (const { token, probability } of choices) {
    const text = token.trimStart();
    if (text.length === 0) continue;
    if (start.startsWith(text) || opening.some((open) => text.startsWith(open))) total += probability;
  }
  return Math.min(1, total);
}

function openings(callFormat: TemplateCallFormat | undefined): string[] {
  return callFormat ? [...CALL_OPENINGS, callFormat.open] : CALL_OPENINGS;
}
