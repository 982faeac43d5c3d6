/**
 * Rescue bare JSON tool calls, alone or embedded in prose: `Sure! {"tool": "x", "args": {...}} Done.`
 */

import type { ToolCall } from "../../core/types.ts";
import { readToolCalls } from "./call-shape.ts";
import { scanJson } from "./json-scan.ts";
import { ABSENT, found, garbled, type RescueOutcome } from "./outcome.ts";

/**
 * True when a fragment that is not valid JSON starts the way a tool call does: an object (or an
 * array of objects) whose first key is `tool`, `name` or `function`. Such a fragment is a broken
 * call — truncated, single-quoted, trailing comma — rather than braces in prose.
 */
export function looksLikeCall(fragment: string): boolean {
  return /^[[{]\s*(?:\{\s*)?["']?(?:tool|name|function)["']?\s*:/.test(fragment.trimStart());
}

/**
 * Rescue every JSON tool call found in `text`, in order.
 *
 * Objects and arrays are found by matching brackets outside strings, never by a greedy regex, so
 * prose around and between calls is ignored, as are JSON values that are not calls. Strict JSON
 * only: nothing is repaired. When any call-shaped candidate is broken (truncated, invalid args,
 * single quotes), the whole text is `garbled`, so a half-written batch is never run in part.
 *
 * One exception, a cut-off repetition (docs/decisions/038): a small model that loops writes the
 * same calls again and again until the token cap cuts the last one off. When the only broken
 * candidate is an unclosed fragment at the very end of the text, and that fragment is the start of
 * a call already written out in full in this answer, it is the loop's next copy, not a new call:
 * it is dropped, and the batch keeps one of each distinct call, in order. Nothing is completed.
 * @example
 * parseJsonCalls('Sure! {"tool": "get_weather", "args": {"city": "Paris"}}')
 * // { status: "found", calls: [{ tool: "get_weather", args: { city: "Paris" } }] }
 */
export function parseJsonCalls(text: string): RescueOutcome {
  const calls: ToolCall[] = [];
  // The source text of each call written out in full, for telling a cut-off copy of one.
  const written: string[] = [];
  for (const candidate of scanJson(text)) {
    if (!candidate.valid) {
      const fragment = text.slice(candidate.start, candidate.end);
      if (!looksLikeCall(fragment)) continue;
      if (candidate.end === text.length && isCopyOfWritten(fragment, written)) return found(distinct(calls));
      return garbled(`a tool call is not valid JSON: ${preview(fragment)}`);
    }
    const reading = readToolCalls(candidate.value);
    if (reading.kind === "invalid") return garbled(reading.reason);
    if (reading.kind === "calls") {
      calls.push(...reading.calls);
      written.push(text.slice(candidate.start, candidate.end));
    }
  }
  return calls.length > 0 ? found(calls) : ABSENT;
}

/** True when `fragment`, cut off at the end of the text, is the start of a call written in full before it. */
function isCopyOfWritten(fragment: string, written: readonly string[]): boolean {
  const start = fragment.trimEnd();
  return start.length > 0 && written.some((call) => call.startsWith(start));
}

/** One of each distinct call (same tool, same arguments), in order of first appearance. */
function distinct(calls: readonly ToolCall[]): ToolCall[] {
  const seen = new Set<string>();
  return calls.filter((call) => {
    const key = JSON.stringify([call.tool, call.args]);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function preview(fragment: string): string {
  return fragment.length > 80 ? `${fragment.slice(0, 80)}…` : fragment;
}
