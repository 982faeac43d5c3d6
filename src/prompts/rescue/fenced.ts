/**
 * Rescue tool calls from Markdown code fences: ```json, ```tool_call or a bare ``` holding JSON calls.
 */

import type { ToolCall } from "../../core/types.ts";
import { parseJsonCalls } from "./json-call.ts";
import { ABSENT, found, type RescueOutcome } from "./outcome.ts";

/** Fence languages that may hold a JSON tool call (compared lower-cased). Others (python, …) are skipped. */
const JSON_FENCE_LANGUAGES = new Set(["", "json", "tool_call", "tool_calls", "tool"]);

/** ```lang, optional spaces and newline, then the body up to the closing fence or the end of the text. */
const FENCE = /```([\w-]*)[ \t]*\r?\n?([\s\S]*?)(?:```|$)/g;

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
  if (!text.includes("```")) return ABSENT;
  const calls: ToolCall[] = [];
  for (const match of text.matchAll(FENCE)) {
    const language = (match[1] ?? "").toLowerCase();
    if (!JSON_FENCE_LANGUAGES.has(language)) continue;
    const outcome = parseJsonCalls(match[2] ?? "");
    if (outcome.status === "garbled") return outcome;
    if (outcome.status === "found") calls.push(...outcome.calls);
  }
  return found(calls);
}
