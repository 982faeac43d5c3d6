/**
 * Rescue the rehearsal form `name[ARGS]{json}` that models trained on Mistral's v11 template emit.
 */

import type { ToolCall } from "../../core/types.ts";
import { isJsonObject } from "./call-shape.ts";
import { matchBracket, skipWhitespace, tryParseJson } from "./json-scan.ts";
import { ABSENT, found, garbled, type RescueOutcome } from "./outcome.ts";

/** A tool name, an optional `[CALL_ID]id` (some Mistral templates), then `[ARGS]`. */
const HEADER = /([A-Za-z0-9_-]{1,64})(?:\[CALL_ID\][A-Za-z0-9_-]*)?\[ARGS\]/g;

/**
 * Rescue every `name[ARGS]{json}` call in `text`, in order; prose between calls is ignored.
 *
 * The args must be one strict JSON object; a header followed by anything else (truncated JSON, an
 * array, nothing) makes the text `garbled`.
 * @example
 * parseRehearsal('get_weather[ARGS]{"city": "Paris"}')
 * // { status: "found", calls: [{ tool: "get_weather", args: { city: "Paris" } }] }
 */
export function parseRehearsal(text: string): RescueOutcome {
  if (!text.includes("[ARGS]")) return ABSENT;
  const calls: ToolCall[] = [];
  const header = new RegExp(HEADER);
  for (let match = header.exec(text); match !== null; match = header.exec(text)) {
    const tool = match[1] ?? "";
    const argsStart = skipWhitespace(text, match.index + match[0].length);
    if (text[argsStart] !== "{") return garbled(`${tool}[ARGS] is not followed by a JSON object`);
    const bracket = matchBracket(text, argsStart);
    if (!("end" in bracket)) return garbled(`the args of ${tool}[ARGS] never close`);
    const parsed = tryParseJson(text.slice(argsStart, bracket.end));
    if (!parsed.ok || !isJsonObject(parsed.value)) {
      return garbled(`the args of ${tool}[ARGS] are not a JSON object`);
    }
    calls.push({ tool, args: parsed.value });
    // Resume after the args, so "[ARGS]" inside an argument string is not read as a call.
    header.lastIndex = bracket.end;
  }
  return found(calls);
}
