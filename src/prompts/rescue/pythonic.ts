/**
 * Rescue pythonic calls written without a marker: `[get_weather(city="Paris"), get_time(zone="CET")]`
 * (Llama 3.2, LFM2 and Gemma's documented prompt format) or a call alone on its line.
 */

import type { ToolCall } from "../../core/types.ts";
import { ABSENT, found, garbled, type RescueContext, type RescueOutcome } from "./outcome.ts";
import { readCall, readCallList, readName, skipSpace } from "./python-literal.ts";

/** Where a line's content starts: the start of the text or just after a newline, past spaces and tabs. */
const LINE_START = /(?:^|\n)[ \t]*/g;

/**
 * Rescue the pythonic calls of `text` that start a line and name a known tool, in order.
 *
 * Two shapes count: a list `[name(k=v, …), …]` starting a line (whatever follows it — LFM2 writes a
 * sentence after its calls), and a call `name(k=v, …)` that is the whole line (a `;` may end it).
 * Only names in `context.toolNames` start a call, so prose mentioning `f(x)` is ignored; a call
 * that starts like one of these but cannot be read (a positional argument, a variable, an
 * unclosed string) makes the text `garbled`. Arguments are Python literals (see `readLiteral`);
 * nothing is evaluated.
 * @example
 * parsePythonic('[get_weather(city="Paris"), get_time(zone="CET")]', { toolNames: ["get_weather", "get_time"] })
 * // { status: "found", calls: [{ tool: "get_weather", args: { city: "Paris" } }, { tool: "get_time", args: { zone: "CET" } }] }
 */
export function parsePythonic(text: string, context: RescueContext = {}): RescueOutcome {
  const known = new Set(context.toolNames ?? []);
  if (known.size === 0 || !text.includes("(")) return ABSENT;
  const calls: ToolCall[] = [];
  const lineStart = new RegExp(LINE_START);
  for (let match = lineStart.exec(text); match !== null; match = lineStart.exec(text)) {
    const start = match.index + match[0].length;
    if (match[0].length === 0) lineStart.lastIndex = match.index + 1;
    const listed = text[start] === "[";
    const nameAt = listed ? skipSpace(text, start + 1) : start;
    if (!startsKnownCall(text, nameAt, known)) continue;
    if (listed) {
      const list = readCallList(text, start);
      if (!list.ok) return garbled(`a pythonic call list cannot be read: ${list.reason}`);
      calls.push(...list.value);
      lineStart.lastIndex = list.end;
      continue;
    }
    const call = readCall(text, nameAt);
    if (!call.ok) return garbled(`a pythonic call cannot be read: ${call.reason}`);
    // A call followed by more text on its line is prose quoting a call, not one (nor is any call
    // its string arguments hold: the scan goes on after it).
    lineStart.lastIndex = call.end;
    if (!/^[ \t]*;?[ \t]*(?:\r?\n|$)/.test(text.slice(call.end))) continue;
    calls.push(call.value);
  }
  return found(calls);
}

/** True when a known tool's name followed by `(` starts at `index`. */
export function startsKnownCall(text: string, index: number, known: ReadonlySet<string>): boolean {
  const head = readName(text, index);
  return head !== null && known.has(head.name) && text[skipSpace(text, head.end)] === "(";
}
