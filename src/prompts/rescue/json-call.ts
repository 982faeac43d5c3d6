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
 * @example
 * parseJsonCalls('Sure! {"tool": "get_weather", "args": {"city": "Paris"}}')
 * // { status: "found", calls: [{ tool: "get_weather", args: { city: "Paris" } }] }
 */
export function parseJsonCalls(text: string): RescueOutcome {
  const calls: ToolCall[] = [];
  for (const candidate of scanJson(text)) {
    if (!candidate.valid) {
      const fragment = text.slice(candidate.start, candidate.end);
      if (looksLikeCall(fragment)) return garbled(`a tool call is not valid JSON: ${preview(fragment)}`);
      continue;
    }
    const reading = readToolCalls(candidate.value);
    if (reading.kind === "invalid") return garbled(reading.reason);
    if (reading.kind === "calls") calls.push(...reading.calls);
  }
  return calls.length > 0 ? found(calls) : ABSENT;
}

function preview(fragment: string): string {
  return fragment.length > 80 ? `${fragment.slice(0, 80)}…` : fragment;
}
