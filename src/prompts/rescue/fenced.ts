/**
 * Rescue tool calls from Markdown code fences: ```json, ```tool_call or a bare ``` holding JSON calls.
 */

import type { ToolCall } from "../../core/types.ts";
import { parseJsonCalls } from "./json-call.ts";
import { ABSENT, found, type RescueOutcome } from "./outcome.ts";

/** Fence languages that may hold a JSON tool call (compared lower-cased). Others (python, …) are skipped. */
const JSON_FENCE_LANGUAGES = new Set(["", "json", "tool_call", "tool_calls", "tool"]);

/** An opening fence: ```lang, optional spaces and a newline. */
const FENCE_OPEN = /```([\w-]*)[ \t]*\r?\n?/g;
const FENCE = "```";

/**
 * Where the fence body starting at `from` ends: the first ``` that is not inside a JSON string.
 * Strings count only inside brackets, so a quote in prose cannot hide the closing fence; a call
 * whose string arguments hold ``` (a Markdown file's content) keeps its whole body.
 */
function fenceEnd(text: string, from: number): number {
  let depth = 0;
  let inString = false;
  for (let index = from; index < text.length; index++) {
    const char = text[index];
    if (inString) {
      if (char === "\\") index++;
      else if (char === '"') inString = false;
    } else if (char === '"' && depth > 0) {
      inString = true;
    } else if (char === "{" || char === "[") {
      depth++;
    } else if ((char === "}" || char === "]") && depth > 0) {
      depth--;
    } else if (text.startsWith(FENCE, index)) {
      return index;
    }
  }
  return inString ? (firstFenceAfter(text, from) ?? text.length) : text.length;
}

/** The plain first ``` at or after `from`: the end of a body whose string never closes. */
function firstFenceAfter(text: string, from: number): number | undefined {
  const index = text.indexOf(FENCE, from);
  return index < 0 ? undefined : index;
}

/**
 * Rescue the calls held by the text's JSON code fences, in order.
 *
 * Each fence body is read like bare JSON (see `parseJsonCalls`): one call, an array of calls, or
 * several calls one per line. A fence left open at the end of the output runs to the end. Fences of
 * other languages are ignored; a JSON fence holding no call is skipped; a fence holding a broken
 * call makes the whole text `garbled`.
 * @example
 * parseFenced('Here you go:\n```json\n{"tool": "get_weather", "args": {"city": "Paris"}}\n```')
 * // { status: "found", calls: [{ tool: "get_weather", args: { city: "Paris" } }] }
 */
export function parseFenced(text: string): RescueOutcome {
  if (!text.includes(FENCE)) return ABSENT;
  const calls: ToolCall[] = [];
  const opener = new RegExp(FENCE_OPEN);
  for (let match = opener.exec(text); match !== null; match = opener.exec(text)) {
    const language = (match[1] ?? "").toLowerCase();
    const start = match.index + match[0].length;
    const json = JSON_FENCE_LANGUAGES.has(language);
    const end = json ? fenceEnd(text, start) : (firstFenceAfter(text, start) ?? text.length);
    opener.lastIndex = end + FENCE.length;
    if (!json) continue;
    const outcome = parseJsonCalls(text.slice(start, end));
    if (outcome.status === "garbled") return outcome;
    if (outcome.status === "found") calls.push(...outcome.calls);
  }
  return found(calls);
}
