/**
 * Rescue Llama 3.x calls after `<|python_tag|>`: `{"name": …, "parameters": …}`, several joined by `;`.
 */

import type { ToolCall } from "../../core/types.ts";
import { readToolCalls } from "./call-shape.ts";
import { matchBracket, skipWhitespace, tryParseJson } from "./json-scan.ts";
import { ABSENT, found, garbled, type RescueOutcome } from "./outcome.ts";

const TAG = "<|python_tag|>";
/** Tokens that end a Llama turn or message; a server that keeps special tokens leaves them in. */
const END_TOKEN = /<\|(?:eom_id|eot_id|end_of_text)\|>/;

/**
 * Rescue the JSON calls after every `<|python_tag|>` in `text`, in order.
 *
 * The text after a tag, up to `<|eom_id|>`/`<|eot_id|>`, the next tag or the end, must be JSON
 * calls separated by `;` (whitespace allowed). Anything else — Python code for Llama's built-in
 * tools such as `brave_search.call(query="…")`, a truncated object — makes the text `garbled`.
 * @example
 * parsePythonTag('<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>')
 * // { status: "found", calls: [{ tool: "get_weather", args: { city: "Paris" } }] }
 */
export function parsePythonTag(text: string): RescueOutcome {
  if (!text.includes(TAG)) return ABSENT;
  const calls: ToolCall[] = [];
  for (const segment of text.split(TAG).slice(1)) {
    const end = segment.search(END_TOKEN);
    const outcome = readCalls(end === -1 ? segment : segment.slice(0, end));
    if (outcome.status === "garbled") return outcome;
    if (outcome.status === "absent") return garbled(`${TAG} is not followed by a tool call`);
    calls.push(...outcome.calls);
  }
  return found(calls);
}

/** `{…}; {…}` → calls; the whole body must be read. */
function readCalls(body: string): RescueOutcome {
  const calls: ToolCall[] = [];
  let position = skipWhitespace(body, 0);
  while (position < body.length) {
    const first = body[position];
    if (first !== "{" && first !== "[") return garbled(`the text after ${TAG} is not JSON`);
    const bracket = matchBracket(body, position);
    if (!("end" in bracket)) return garbled(`a call after ${TAG} never closes`);
    const parsed = tryParseJson(body.slice(position, bracket.end));
    if (!parsed.ok) return garbled(`a call after ${TAG} is not valid JSON`);
    const reading = readToolCalls(parsed.value);
    if (reading.kind !== "calls") {
      return garbled(reading.kind === "invalid" ? reading.reason : `JSON after ${TAG} is not a tool call`);
    }
    calls.push(...reading.calls);
    position = skipWhitespace(body, bracket.end);
    if (body[position] === ";") position = skipWhitespace(body, position + 1);
    else if (position < body.length) return garbled(`calls after ${TAG} must be separated by ';'`);
  }
  return found(calls);
}
