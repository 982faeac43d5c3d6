/** Rescue tool calls that a model wrote as text instead of through native function calling. */

import { resolveToolName } from "../../core/tool-names.ts";
import { type ToolSpec, toolJsonSchema } from "../../core/tools.ts";
import type { ToolCall } from "../../core/types.ts";
import type { TemplateCallFormat } from "../chat-template.ts";
import { coerceTextArgs } from "./coerce-args.ts";
import { parseFenced } from "./fenced.ts";
import { parseFunctionGemma } from "./function-gemma.ts";
import { parseHarmony } from "./harmony.ts";
import { parseHermes } from "./hermes.ts";
import { parseJsonCalls } from "./json-call.ts";
import { parseLfm2 } from "./lfm2.ts";
import { parseMistral } from "./mistral.ts";
import type { RescueOutcome, RescueParser } from "./outcome.ts";
import { parsePythonTag } from "./python-tag.ts";
import { parsePythonic } from "./pythonic.ts";
import { parseQwenCoder } from "./qwen-coder.ts";
import { parseRehearsal } from "./rehearsal.ts";
import { parseShownCalls } from "./shown-call.ts";
import { parseTemplateCalls } from "./template-calls.ts";
import { stripThinking } from "./thinking.ts";
import { parseToolCode } from "./tool-code.ts";

export type { RescueContext, RescueOutcome, RescueParser } from "./outcome.ts";

/** Options of {@link rescueToolCall}. */
export interface RescueOptions {
  /**
   * The specs of the available tools. Formats whose values are text (Qwen-Coder's
   * `<parameter=k>v</parameter>`) are converted by each tool's JSON Schema; without a spec the
   * values stay strings.
   */
  tools?: readonly ToolSpec[];
  /**
   * How the model writes a call, read from its chat template (`callFormatFromTemplate`): tried
   * before the built-in formats, so a family whose calls are JSON between markers needs no
   * parser of its own (docs/decisions/035-call-format-from-the-chat-template.md).
   */
  callFormat?: TemplateCallFormat | undefined;
}

/**
 * Parsers in the order they are tried (ADR 010): special-token markers first, then the rehearsal
 * form, then code fences (```tool_code, then JSON fences), then the marker-less formats — the
 * `name({json})` form a step nudge shows, pythonic calls of known tools starting a line, then bare
 * JSON.
 */
const RESCUE_PARSERS: readonly RescueParser[] = [
  parseHermes,
  parseMistral,
  parsePythonTag,
  parseQwenCoder,
  parseLfm2,
  parseHarmony,
  parseFunctionGemma,
  parseRehearsal,
  parseToolCode,
  parseFenced,
  parseShownCalls,
  parsePythonic,
  parseJsonCalls,
];

/**
 * Salvage the tool calls a model wrote as text; `null` when nothing can be rescued.
 *
 * Understands bare JSON `{"tool", "args"}` / `{"name", "arguments" | "parameters"}` (and arrays of
 * them, also inside prose), fenced JSON code blocks, the rehearsal form `name[ARGS]{json}`,
 * Qwen/Hermes `<tool_call>`, Mistral `[TOOL_CALLS]` (`[{…}]`, `name[ARGS]{json}`, `name{json}`),
 * Qwen-Coder `<function=…>` XML, Llama `<|python_tag|>`, LFM2 `<|tool_call_start|>`, gpt-oss
 * harmony `to=functions.name … {json}`, FunctionGemma `call:name{k:<escape>v<escape>}`, Gemma's
 * ```tool_code fences, the `name({json})` form a step nudge shows the model (ADR 025), and pythonic
 * calls `[name(k="v"), …]` (Llama 3.2, LFM2) — the last three without any marker only for names in
 * `toolNames` and at the start of a line, so prose that mentions `f(x)` is not a call.
 * `<think>` and `[THINK]` blocks are ignored. The first format present in the text decides (in
 * the order of ADR 010) and all of its calls are returned, in order.
 *
 * Qwen-Coder values are text: with `options.tools` they are converted by the tool's JSON Schema
 * (`"10"` → `10` for an integer, `"02134"` stays a string for a string); without, they stay strings.
 *
 * A name a small model got nearly right (case, `.`/`-` for `_`, a namespace prefix missing or
 * extra) is read as the one offered tool it stands for (`resolveToolName`).
 *
 * All or nothing: when a call of that format is broken (malformed JSON, args that are not an
 * object) or names a tool not in `toolNames` (not even nearly), the result is `null` — the loop must not run part of
 * a garbled batch; it nudges the model to try again instead. JSON is never repaired.
 * @example
 * rescueToolCall('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', ["get_weather"])
 * // [{ tool: "get_weather", args: { city: "Paris" } }]
 */
export function rescueToolCall(
  text: string,
  toolNames: readonly string[],
  options: RescueOptions = {},
): ToolCall[] | null {
  return rescueWithNames(text, toolNames, options)?.calls ?? null;
}

/** What {@link rescueWithNames} read: the calls, and how many names it matched as near misses. */
export interface RescuedCalls {
  calls: ToolCall[];
  /** Calls whose name was a near miss of an offered tool (`resolveToolName`), now that tool's. */
  renamed: number;
}

/**
 * {@link rescueToolCall}, also saying how many names were near misses. A name that is no offered
 * tool, not even nearly (or nearly two), makes the whole batch unreadable: `null`.
 */
export function rescueWithNames(
  text: string,
  toolNames: readonly string[],
  options: RescueOptions = {},
): RescuedCalls | null {
  if (typeof text !== "string" || toolNames.length === 0) return null;
  const outcome = detectToolCalls(text, toolNames, options.callFormat);
  if (outcome.status !== "found") return null;
  let renamed = 0;
  const named: ToolCall[] = [];
  for (const call of outcome.calls) {
    const resolved = resolveToolName(call.tool, toolNames);
    if (resolved === null) return null;
    if (resolved.match !== "exact") renamed += 1;
    named.push(resolved.match === "exact" ? call : { ...call, tool: resolved.name });
  }
  const textValued = new Set(outcome.textValued);
  if (textValued.size === 0) return { calls: named, renamed };
  const specs = new Map((options.tools ?? []).map((spec) => [spec.name, spec]));
  const calls = named.map((call, index) => {
    if (!textValued.has(index)) return call;
    const spec = specs.get(call.tool);
    const args = call.args as Record<string, string>;
    return { ...call, args: coerceTextArgs(args, spec && toolJsonSchema(spec)) };
  });
  return { calls, renamed };
}

/**
 * What rescue makes of `text` before tool names are checked: the first format present and its
 * calls (Qwen-Coder values as the strings the model wrote, their indexes in `textValued`), or why
 * it is garbled. For logging and debugging a failed rescue. Without `toolNames`, the formats that
 * have no marker (bare pythonic calls, FunctionGemma without its tokens) are not looked for. With
 * `callFormat` (read from the model's chat template), its calls are looked for first; when that
 * format is absent or garbled, the built-in formats are tried as without it.
 */
export function detectToolCalls(
  text: string,
  toolNames: readonly string[] = [],
  callFormat?: TemplateCallFormat,
): RescueOutcome {
  const answer = stripThinking(text);
  if (callFormat) {
    const outcome = parseTemplateCalls(answer, callFormat);
    if (outcome.status === "found") return outcome;
  }
  const context = { toolNames };
  for (const parse of RESCUE_PARSERS) {
    const outcome = parse(answer, context);
    if (outcome.status !== "absent") return outcome;
  }
  return { status: "absent" };
}
