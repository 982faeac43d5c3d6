/**
 * Rescue Gemma 3's ```tool_code fences: `print(get_weather(city="Paris"))`, a bare call, or a list.
 */

import type { ToolCall } from "../../core/types.ts";
import { ABSENT, found, garbled, type RescueOutcome } from "./outcome.ts";
import { type Read, readCall, readCallList, readName, skipSpace } from "./python-literal.ts";

/** An opening ```tool_code fence (the language compared case-insensitively). */
const FENCE_OPEN = /```tool_code[ \t]*\r?\n?/gi;
const FENCE = "```";

/**
 * Rescue the calls of every ```tool_code fence in `text`, in order.
 *
 * A fence holds statements, one per line or separated by `;`: `print(call)` (Gemma's documented
 * form), a bare call `name(k=v)`, or a list `[call, …]`. Arguments are Python literals; nothing is
 * evaluated. The fence marks code, so any name counts (an unknown one is rejected by name later);
 * a fence whose code is not such calls — a variable, an expression, positional arguments — makes
 * the text `garbled`. A fence left open at the end of the output runs to the end.
 * @example
 * parseToolCode('```tool_code\nprint(get_weather(city="Paris"))\n```')
 * // { status: "found", calls: [{ tool: "get_weather", args: { city: "Paris" } }] }
 */
export function parseToolCode(text: string): RescueOutcome {
  if (!/```tool_code/i.test(text)) return ABSENT;
  const opener = new RegExp(FENCE_OPEN);
  const calls: ToolCall[] = [];
  for (let match = opener.exec(text); match !== null; match = opener.exec(text)) {
    let position = skipStatementGap(text, match.index + match[0].length);
    while (position < text.length && !text.startsWith(FENCE, position)) {
      const statement = readStatement(text, position);
      if (!statement.ok) return garbled(`a tool_code fence cannot be read: ${statement.reason}`);
      calls.push(...statement.value);
      const gap = skipStatementGap(text, statement.end);
      if (gap === statement.end && gap < text.length && !text.startsWith(FENCE, gap)) {
        return garbled("statements in a tool_code fence are not separated by a newline or ';'");
      }
      position = gap;
    }
    opener.lastIndex = Math.min(text.length, position + FENCE.length);
  }
  return found(calls);
}

/** `print(call)`, `call` or `[call, …]` at `index`. */
function readStatement(text: string, index: number, depth = 0): Read<ToolCall[]> {
  if (text[index] === "[") return readCallList(text, index);
  const head = readName(text, index);
  if (head?.name === "print") {
    const open = skipSpace(text, head.end);
    if (text[open] === "(") {
      if (depth > 0) return { ok: false, reason: "print( holds a print(" };
      const inner = readStatement(text, skipSpace(text, open + 1), depth + 1);
      if (!inner.ok) return inner;
      const close = skipSpace(text, inner.end);
      if (text[close] !== ")") return { ok: false, reason: "print( holds more than a call" };
      return { ok: true, value: inner.value, end: close + 1 };
    }
  }
  const call = readCall(text, index);
  return call.ok ? { ok: true, value: [call.value], end: call.end } : call;
}

/** Skip whitespace and `;` between statements. */
function skipStatementGap(text: string, index: number): number {
  let position = index;
  while (position < text.length && /[\s;]/.test(text[position] ?? "")) position++;
  return position;
}
