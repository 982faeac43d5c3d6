/**
 * How a model writes a tool call, read from its own chat template (docs/decisions/035-call-format-from-the-chat-template.md).
 *
 * A GGUF carries its Jinja chat template. Rendered, the template shows how a call is written back
 * into history (the markers and the JSON keys) and, in the system prompt it builds from the tools,
 * the example call the model is told to copy. llama.cpp's autoparser reads formats the same way,
 * by rendering the template with and without a call and diffing; this module does that with
 * `@huggingface/jinja`, so a new family whose calls are JSON between markers needs no hand-written
 * parser. The first such case: Qwen2.5-Coder 1.5B's template tells the model to write
 * `{{"name": …, "arguments": …}}` (doubled braces), and the model copies them.
 */
import { Template } from "@huggingface/jinja";
import { isJsonObject } from "./rescue/call-shape.ts";
import { matchBracket, tryParseJson } from "./rescue/json-scan.ts";

/** A call format read from a chat template: JSON with a name and arguments between markers. JSON-serializable. */
export interface TemplateCallFormat {
  /** Text that opens a call, e.g. `<tool_call>`. Never empty. */
  open: string;
  /** Text that closes it, e.g. `</tool_call>`; empty when the template writes none. */
  close: string;
  /** The call object's key for the tool's name, e.g. `name`. */
  nameKey: string;
  /** The call object's key for the arguments, e.g. `arguments` or `parameters`. */
  argumentsKey: string;
  /**
   * The template's instructions write the call object with doubled braces (`{{"name": …}}`), as a
   * Python format string escapes them; the model copies that, so one brace pair is dropped.
   */
  doubledBraces: boolean;
}

const PROBE_TOOL = "forge_probe_tool";
const PROBE_ARG = "forge_probe_arg";
const PROBE_VALUE = "forge_probe_value";
const PROBE_QUESTION = "forge_probe_question";
/** A text turn's text: one character no marker holds. */
const TEXT_TURN = "\u00a7";

const PROBE_TOOLS = [
  {
    type: "function",
    function: {
      name: PROBE_TOOL,
      description: "A probe.",
      parameters: {
        type: "object",
        properties: { [PROBE_ARG]: { type: "string" } },
        required: [PROBE_ARG],
      },
    },
  },
];

/**
 * Read how the model writes a call from its Jinja chat template, or `null` when the template's
 * calls are not a JSON object between markers (a pythonic or XML family, a template without
 * tools), or the template cannot be rendered with a probe conversation.
 *
 * Two renders of the same conversation, one whose assistant turn is a call of a probe tool and
 * one whose turn is a text, differ by exactly how a call is written; the JSON object holding the
 * probe's name gives the keys, and the text around it the markers. A third render, the system
 * prompt with the probe tool offered, shows the example the model is told to copy: doubled braces
 * after the opening marker set `doubledBraces`.
 * @example
 * callFormatFromTemplate(qwen25Template)
 * // { open: "<tool_call>", close: "</tool_call>", nameKey: "name", argumentsKey: "arguments", doubledBraces: false }
 */
export function callFormatFromTemplate(source: string): TemplateCallFormat | null {
  let template: Template;
  try {
    template = new Template(source);
  } catch {
    return null;
  }
  const render = (messages: Record<string, unknown>[], addGenerationPrompt: boolean): string | null => {
    try {
      return template.render({
        messages,
        tools: PROBE_TOOLS,
        add_generation_prompt: addGenerationPrompt,
        bos_token: "",
        eos_token: "",
      });
    } catch {
      return null;
    }
  };
  const question = { role: "user", content: PROBE_QUESTION };
  const call = {
    id: "call_0",
    type: "function",
    function: { name: PROBE_TOOL, arguments: { [PROBE_ARG]: PROBE_VALUE } },
  };
  const withCall = render([question, { role: "assistant", content: "", tool_calls: [call] }], false);
  if (withCall === null) return null;
  // Against a text turn whose text shares no character with a marker, the difference is the whole
  // call: an empty turn could share a marker's first `<` and last `>` with the end-of-turn token.
  const withoutCall = render([question, { role: "assistant", content: TEXT_TURN }], false);
  if (withoutCall === null) return null;
  const written = difference(withCall, withoutCall);
  const object = probeObject(written);
  if (object === null) return null;
  const open = written.slice(0, object.start).trim();
  if (open.length === 0) return null;
  const close = written.slice(object.end).trim();
  const instructions = render([question], true) ?? "";
  return { open, close, ...object.keys, doubledBraces: showsDoubledBraces(instructions, open) };
}

/** The part of `longer` that `shorter` lacks: what lies between their common prefix and suffix. */
function difference(longer: string, shorter: string): string {
  let prefix = 0;
  while (prefix < shorter.length && longer[prefix] === shorter[prefix]) prefix++;
  let suffix = 0;
  while (
    suffix < shorter.length - prefix &&
    longer[longer.length - 1 - suffix] === shorter[shorter.length - 1 - suffix]
  ) {
    suffix++;
  }
  return longer.slice(prefix, longer.length - suffix);
}

/** The JSON object in `written` that names the probe tool and holds its arguments, with its keys. */
function probeObject(
  written: string,
): { start: number; end: number; keys: { nameKey: string; argumentsKey: string } } | null {
  const at = written.indexOf(PROBE_TOOL);
  for (let start = written.lastIndexOf("{", at); start !== -1; start = written.lastIndexOf("{", start - 1)) {
    const match = matchBracket(written, start);
    if (!("end" in match) || match.end < at) continue;
    const parsed = tryParseJson(written.slice(start, match.end));
    if (!parsed.ok || !isJsonObject(parsed.value)) continue;
    const entries = Object.entries(parsed.value);
    const nameKey = entries.find(([, value]) => value === PROBE_TOOL)?.[0];
    const argumentsKey = entries.find(([, value]) => holdsProbeArgument(value))?.[0];
    if (nameKey !== undefined && argumentsKey !== undefined) {
      return { start, end: match.end, keys: { nameKey, argumentsKey } };
    }
  }
  return null;
}

function holdsProbeArgument(value: unknown): boolean {
  const parsed = typeof value === "string" ? tryParseJson(value) : { ok: true as const, value };
  return parsed.ok && isJsonObject(parsed.value) && parsed.value[PROBE_ARG] === PROBE_VALUE;
}

/** Whether the instructions show the call object after `open` as `{{…}}`. */
function showsDoubledBraces(instructions: string, open: string): boolean {
  let at = instructions.indexOf(open);
  while (at !== -1) {
    const after = instructions.slice(at + open.length).trimStart();
    if (after.startsWith("{{")) return true;
    at = instructions.indexOf(open, at + open.length);
  }
  return false;
}
