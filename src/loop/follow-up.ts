/**
 * Several calls in one answer (docs/decisions/026-parallel-follow-up.md): a small model asked for
 * two calls writes the first and stops. The follow-up sends its answer back as the start of the
 * assistant's turn (an assistant prefill, which llama-server and most OpenAI-compatible servers
 * continue) and lets the model go on from there: it writes the next call, or ends the turn. Each
 * step is short (`maxTokens`, about one call's length), and the calls it adds are validated like
 * the first: known tools (near misses resolved), decodable arguments, no repeat of a call already
 * in the answer.
 */

import { resolveToolName } from "../core/tool-names.ts";
import type { ToolSpec } from "../core/tools.ts";
import type { LLMClient, LLMResponse, ToolCall } from "../core/types.ts";
import { callWords, unusedValues } from "../guardrails/grounding.ts";
import type { TemplateCallFormat } from "../prompts/chat-template.ts";
import { rescueWithNames } from "../prompts/rescue/index.ts";

/** Options of {@link followUpCalls}. */
export interface FollowUpOptions {
  client: LLMClient;
  /** The wire history the accepted answer was generated from (as the client sent it). */
  wire: readonly Record<string, unknown>[];
  tools: readonly ToolSpec[];
  /** The calls accepted so far, in order. */
  calls: readonly ToolCall[];
  /** The model's answer as it wrote it: its text, or its native calls. */
  answer: LLMResponse;
  /** Tools whose call ends the answer rather than adds to it (the proxy's `respond`). */
  stopTools?: readonly string[];
  /** Most calls in the answer, the first ones included (default 8). */
  maxCalls?: number;
  /** Token cap of one step (default: about the length of the answer so far, at least 48). */
  maxTokens?: number;
  /** How the model writes a call, read from its chat template: its continuation is rescued with it. */
  callFormat?: TemplateCallFormat | undefined;
  /**
   * The request's text (the user's latest message). When the model ends its turn while this text
   * still names values no call used (numbers, names: `unusedValues`), the follow-up starts the next
   * call for it, opening it the way the model opened its first, and keeps what it writes only if it
   * is new and uses one of those values. Absent: the model alone decides when the answer ends.
   */
  request?: string | undefined;
  signal?: AbortSignal;
}

/** What the follow-up made of an answer. */
export interface FollowUpResult {
  calls: ToolCall[];
  /** LLM calls the follow-up made. */
  steps: number;
  /** Calls it added. */
  added: number;
  /** Of `steps`, those that opened the next call for the model (values of the request left unused). */
  opened: number;
}

/** The default most calls an answer may hold after a follow-up. */
export const DEFAULT_FOLLOW_UP_MAX_CALLS = 8;

/**
 * Ask the model to continue an answer that holds calls (see the module comment) until a step adds
 * nothing new. Errors of the client propagate; a step the client aborts ends the follow-up with
 * what it has.
 */
export async function followUpCalls(options: FollowUpOptions): Promise<FollowUpResult> {
  const maxCalls = options.maxCalls ?? DEFAULT_FOLLOW_UP_MAX_CALLS;
  const names = options.tools.map((tool) => tool.name);
  const stop = new Set(options.stopTools ?? []);
  const calls = [...options.calls];
  const first = answerText(options.answer).trimEnd();
  // About one call's length: a step writes one call (or a line of prose, and stops).
  const maxTokens = options.maxTokens ?? Math.max(48, Math.ceil(first.length / 3));
  const opening = callOpening(first);
  let prefix = first;
  let steps = 0;
  let opened = 0;
  const step = async (sent: string, lead = "") => {
    const messages = [...options.wire, { role: "assistant", content: sent }];
    steps += 1;
    const response = await options.client.send(messages, [...options.tools], {
      ...(options.signal && { signal: options.signal }),
      sampling: { maxTokens },
    });
    return continuationOf(response, sent, names, options.tools, options.callFormat, lead);
  };
  const isNew = (call: ToolCall) => !stop.has(call.tool) && !calls.some((known) => isSameCall(known, call));
  while (calls.length < maxCalls && prefix.length > 0) {
    let sent = `${prefix}${CONTINUE}`;
    let next = await step(sent);
    let fresh = next.calls.filter(isNew);
    let lastValueUsed = false;
    const ended = fresh.length === 0 && !next.calls.some((call) => stop.has(call.tool));
    // The model ended its turn: if the request names values no call used, open the next call for it.
    const unused = new Set(
      ended && options.request !== undefined ? unusedValues(options.request, calls) : [],
    );
    if (ended) {
      if (unused.size === 0 || opening === null) break;
      sent = `${sent}${opening}`;
      opened += 1;
      const openedStep = await step(sent, opening);
      fresh = openedStep.calls.filter(
        (call) => isNew(call) && [...callWords(call)].some((word) => unused.has(word)),
      );
      for (const call of fresh) for (const word of callWords(call)) unused.delete(word);
      lastValueUsed = unused.size === 0;
      next = { ...openedStep, text: openedStep.text.slice(opening.length) };
    }
    calls.push(...fresh.slice(0, maxCalls - calls.length));
    if (fresh.length === 0 || next.calls.some((call) => stop.has(call.tool))) break;
    // An opened call that used the request's last unused value ends the answer.
    if (lastValueUsed) break;
    prefix = `${sent}${next.text}`.trimEnd();
  }
  return { calls, steps, added: calls.length - options.calls.length, opened };
}

/**
 * How the answer's first call opens, up to its first `{` (```` ```json\n{ ````, `<tool_call>\n{`),
 * or null when the answer holds no object to open.
 */
export function callOpening(answer: string): string | null {
  const brace = answer.indexOf("{");
  if (brace < 0) return null;
  const lineStart = answer.lastIndexOf("\n\n", brace);
  return answer.slice(lineStart < 0 ? 0 : lineStart + 2, brace + 1);
}

/** What the model is given to go on from: its answer and a blank line, where a next call would start. */
const CONTINUE = "\n\n";

/**
 * The new part of a continuation (servers answer a prefill with the prefill and what follows, or
 * with what follows alone) and the calls it holds, up to its last complete call when the step's
 * token cap cut the next one short.
 */
export function continuationOf(
  response: LLMResponse,
  sent: string,
  toolNames: readonly string[],
  tools: readonly ToolSpec[] = [],
  callFormat?: TemplateCallFormat,
  lead = "",
): { text: string; calls: ToolCall[] } {
  if (Array.isArray(response)) {
    return { text: `\n${renderCalls(response)}`, calls: continuationCalls(response, toolNames, tools) };
  }
  const content = response.content;
  // What the model was given to go on from (`lead`, an opened call) belongs to what it wrote.
  const text = `${lead}${
    content.startsWith(sent)
      ? content.slice(sent.length)
      : content.startsWith(sent.trimEnd())
        ? content.slice(sent.trimEnd().length)
        : content
  }`;
  for (const end of completeEnds(text)) {
    const calls = continuationCalls({ content: text.slice(0, end) }, toolNames, tools, callFormat);
    if (calls.length > 0) return { text: text.slice(0, end), calls };
  }
  return { text, calls: [] };
}

/** Where a complete call may end in `text`: its end, then after each closing fence or tag, last first. */
function completeEnds(text: string): number[] {
  const ends = new Set<number>([text.length]);
  for (const match of text.matchAll(/```|<\/tool_call>|<\/function>|\}\s*\n/g))
    ends.add(match.index + match[0].length);
  return [...ends].sort((a, b) => b - a);
}

/** The calls a continuation holds: native calls of offered tools, or the calls its text holds. */
export function continuationCalls(
  response: LLMResponse,
  toolNames: readonly string[],
  tools: readonly ToolSpec[] = [],
  callFormat?: TemplateCallFormat,
): ToolCall[] {
  if (Array.isArray(response)) {
    const resolved: ToolCall[] = [];
    for (const call of response) {
      const name = resolveToolName(call.tool, toolNames);
      if (name === null || call.argumentsError !== undefined) return resolved;
      resolved.push({ ...call, tool: name.name });
    }
    return resolved;
  }
  if (response.content.trim().length === 0) return [];
  return rescueWithNames(response.content, toolNames, { tools, callFormat })?.calls ?? [];
}

/** An answer's text as the model wrote it, or its native calls in the Hermes form. */
export function answerText(answer: LLMResponse): string {
  return Array.isArray(answer) ? renderCalls(answer) : answer.content;
}

function renderCalls(calls: readonly ToolCall[]): string {
  return calls
    .map((call) => `<tool_call>\n${JSON.stringify({ name: call.tool, arguments: call.args })}\n</tool_call>`)
    .join("\n");
}

/** The same tool with the same arguments (key order ignored). */
export function isSameCall(a: ToolCall, b: ToolCall): boolean {
  return a.tool === b.tool && stableJson(a.args) === stableJson(b.args);
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${stableJson(item)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
