/**
 * Rescue Mistral calls: `[TOOL_CALLS][{"name": …, "arguments": …}]` (v3 templates),
 * `[TOOL_CALLS]name[ARGS]{json}` (v11 templates) and `[TOOL_CALLS]name{json}` (Devstral,
 * Mistral Small 3.x and Ministral falling back to their native serialization in prompt mode).
 */

import type { ToolCall } from "../../core/types.ts";
import { isJsonObject, readToolCalls } from "./call-shape.ts";
import { matchBracket, skipWhitespace, tryParseJson } from "./json-scan.ts";
import { ABSENT, found, garbled, type RescueOutcome } from "./outcome.ts";
import { parseRehearsal } from "./rehearsal.ts";

const MARKER = "[TOOL_CALLS]";

/**
 * A named call's header at the current position: the tool name, an optional `[CALL_ID]id`, an
 * optional `[ARGS]`, then optional whitespace (a space or a newline) before the args.
 */
const NAMED_HEADER = /([A-Za-z0-9_-]{1,64})(?:\[CALL_ID\][A-Za-z0-9_-]*)?(\[ARGS\])?\s*/y;

/**
 * Rescue the calls after every `[TOOL_CALLS]` marker in `text`, in order; text before the first
 * marker (an apology, stray reasoning) is ignored.
 *
 * After a marker comes either a JSON array (or object) of `{"name", "arguments"}` calls, or one
 * or more named calls `name{json}` / `name[ARGS]{json}` (with no separator, a space or a newline
 * before the JSON). Text after the calls, such as `</s>`, is ignored. A marker followed by
 * anything else, or by a broken call (JSON that never closes or is not an object), makes the text
 * `garbled`.
 * @example
 * parseMistral('[TOOL_CALLS]read{"file_path": "a.py"}\n[TOOL_CALLS]read {"file_path": "b.py"}')
 * // { status: "found", calls: [{ tool: "read", args: { file_path: "a.py" } }, { tool: "read", args: { file_path: "b.py" } }] }
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
  if (first !== "[" && first !== "{") return readNamedCalls(segment, start);
  const bracket = matchBracket(segment, start);
  if (!("end" in bracket)) return garbled(`the JSON after ${MARKER} never closes`);
  const parsed = tryParseJson(segment.slice(start, bracket.end));
  if (!parsed.ok) return garbled(`the JSON after ${MARKER} is not valid`);
  const reading = readToolCalls(parsed.value);
  if (reading.kind === "invalid") return garbled(reading.reason);
  if (reading.kind === "not-a-call") return garbled(`the JSON after ${MARKER} is not a tool call`);
  return found(reading.calls);
}

/**
 * Named calls from `start` on, back to back (whitespace between them). Where they stop, the rest
 * is ignored unless it holds more `name[ARGS]{json}` calls, which are read as the rehearsal form
 * (as is a segment whose first call comes after prose).
 */
function readNamedCalls(segment: string, start: number): RescueOutcome {
  const calls: ToolCall[] = [];
  const header = new RegExp(NAMED_HEADER);
  let position = start;
  for (;;) {
    header.lastIndex = position;
    const match = header.exec(segment);
    const argsStart = match ? match.index + match[0].length : -1;
    if (match === null || segment[argsStart] !== "{") {
      if (match?.[2] !== undefined) return garbled(`${match[1]}[ARGS] is not followed by a JSON object`);
      break;
    }
    const tool = match[1] ?? "";
    const bracket = matchBracket(segment, argsStart);
    if (!("end" in bracket)) return garbled(`the args of ${MARKER}${tool} never close`);
    const parsed = tryParseJson(segment.slice(argsStart, bracket.end));
    if (!parsed.ok || !isJsonObject(parsed.value)) {
      return garbled(`the args of ${MARKER}${tool} are not a JSON object`);
    }
    calls.push({ tool, args: parsed.value });
    position = skipWhitespace(segment, bracket.end);
  }
  // Prose before a `name[ARGS]{json}` call: read the segment as the rehearsal form.
  if (calls.length === 0) return parseRehearsal(segment.slice(start));
  // Later calls separated by prose: read them the way the rehearsal parser does.
  const rest = parseRehearsal(segment.slice(position));
  if (rest.status === "garbled") return rest;
  return found(rest.status === "found" ? [...calls, ...rest.calls] : calls);
}
