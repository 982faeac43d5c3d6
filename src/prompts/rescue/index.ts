/** Rescue tool calls that a model wrote as text instead of through native function calling. */
import type { ToolCall } from "../../core/types.ts";
import { parseFenced } from "./fenced.ts";
import { parseHermes } from "./hermes.ts";
import { parseJsonCalls } from "./json-call.ts";
import { parseMistral } from "./mistral.ts";
import type { RescueOutcome, RescueParser } from "./outcome.ts";
import { parsePythonTag } from "./python-tag.ts";
import { parseQwenCoder } from "./qwen-coder.ts";
import { parseRehearsal } from "./rehearsal.ts";
import { stripThinking } from "./thinking.ts";

export type { RescueOutcome, RescueParser } from "./outcome.ts";

/** Parsers in the order they are tried: explicit markers first, then fences, then bare JSON. */
const PARSERS: readonly RescueParser[] = [
  parseHermes,
  parseMistral,
  parsePythonTag,
  parseQwenCoder,
  parseRehearsal,
  parseFenced,
  parseJsonCalls,
];

/**
 * Salvage the tool calls a model wrote as text; `null` when nothing can be rescued.
 *
 * Understands bare JSON `{"tool", "args"}` / `{"name", "arguments" | "parameters"}` (and arrays of
 * them, also inside prose), fenced JSON code blocks, the rehearsal form `name[ARGS]{json}`,
 * Qwen/Hermes `<tool_call>`, Mistral `[TOOL_CALLS]`, Qwen-Coder `<function=…>` XML and Llama
 * `<|python_tag|>`. `<think>` blocks are ignored. The first format present in the text decides
 * and all of its calls are returned, in order.
 *
 * All or nothing: when a call of that format is broken (malformed JSON, args that are not an
 * object) or names a tool not in `toolNames`, the result is `null` — the loop must not run part of
 * a garbled batch; it nudges the model to try again instead. JSON is never repaired.
 * @example
 * rescueToolCall('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', ["get_weather"])
 * // [{ tool: "get_weather", args: { city: "Paris" } }]
 */
export function rescueToolCall(text: string, toolNames: string[]): ToolCall[] | null {
  if (typeof text !== "string" || toolNames.length === 0) return null;
  const outcome = detectToolCalls(text);
  if (outcome.status !== "found") return null;
  const known = new Set(toolNames);
  return outcome.calls.every((call) => known.has(call.tool)) ? outcome.calls : null;
}

/**
 * What rescue makes of `text` before tool names are checked: the first format present and its
 * calls, or why it is garbled. For logging and debugging a failed rescue.
 */
export function detectToolCalls(text: string): RescueOutcome {
  const answer = stripThinking(text);
  for (const parse of PARSERS) {
    const outcome = parse(answer);
    if (outcome.status !== "absent") return outcome;
  }
  return { status: "absent" };
}
