/**
 * Rescue Mistral calls: `[TOOL_CALLS][{"name": …, "arguments": …}]` (v3 templates) and
 * `[TOOL_CALLS]name[ARGS]{json}` (v11 templates).
 */

import type { ToolCall } from "../../core/types.ts";
import { readToolCalls } from "./call-shape.ts";
import { matchBracket, skipWhitespace, tryParseJson } from "./json-scan.ts";
import { ABSENT, found, garbled, type RescueOutcome } from "./outcome.ts";
import { parseRehearsal } from "./rehearsal.ts";

const MARKER = "[TOOL_CALLS]";

/**
 * Rescue the calls after every `[TOOL_CALLS]` marker in `text`, in order.
 *
 * After a marker comes either a JSON array (or object) of `{"name", "arguments"}` calls — text
 * after it, such as `</s>`, is ignored — or one or more `name[ARGS]{json}` calls. A marker followed
 * by anything else, or by a broken call, makes the text `garbled`.
 * @example
 * parseMistral('[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}]')
 * // { status: "found", calls: [{ tool: "get_weather", args: { city: "Paris" } }] }
 */
export function parseMistral(text: string): RescueOutcome {
  if (!text.includes(MARKER)) return ABSENT;
  const calls: ToolCall[] = [];
  for (const segment of text.split(MARKER).slice(1)) {
    const outcome = readSegment(segment);
    if (outcome.status === "garbled") return outcome;
    if (outcome.status === "absent") return garbled(`${MARKER} is not followed by a tool call`);
    calls.push(...outcome.calls);
  }
  return found(calls);
}

function readSegment(segment: string): RescueOutcome {
  const start = skipWhitespace(segment, 0);
  const first = segment[start];
  if (first !== "[" && first !== "{") return parseRehearsal(segment);
  const bracket = matchBracket(segment, start);
  if (!("end" in bracket)) return garbled(`the JSON after ${MARKER} never closes`);
  const parsed = tryParseJson(segment.slice(start, bracket.end));
  if (!parsed.ok) return garbled(`the JSON after ${MARKER} is not valid`);
  const reading = readToolCalls(parsed.value);
  if (reading.kind === "invalid") return garbled(reading.reason);
  if (reading.kind === "not-a-call") return garbled(`the JSON after ${MARKER} is not a tool call`);
  return found(reading.calls);
}
