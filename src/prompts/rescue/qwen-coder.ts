/**
 * Rescue Qwen3-Coder's XML calls: `<function=name><parameter=key>value</parameter></function>`.
 */

import type { ToolCall } from "../../core/types.ts";
import { ABSENT, found, garbled, type RescueOutcome } from "./outcome.ts";

const FUNCTION_OPEN = "<function=";
const FUNCTION_CLOSE = "</function>";
const PARAMETER_OPEN = "<parameter=";
const PARAMETER_CLOSE = "</parameter>";

/**
 * Rescue every `<function=name>…</function>` call in `text`, in order, with or without a
 * `<tool_call>` wrapper around it.
 *
 * Every value is a string, as the model wrote it, less one leading and one trailing newline (the
 * rule of Qwen's reference parser, so indented code keeps its indentation): the text alone cannot
 * tell `"02134"` from `2134`. `rescueToolCall` converts the values by the tool's JSON Schema when
 * it is given the tool specs (see `coerceTextArgs`). Like Qwen's own parser, it tolerates a missing
 * `</parameter>` or a missing final `</function>`. Anything but parameters inside a function, an unnamed function or parameter,
 * or a parameter given twice makes the text `garbled`.
 * @example
 * parseQwenCoder("<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>")
 * // { status: "found", calls: [{ tool: "get_weather", args: { city: "Paris" } }] }
 */
export function parseQwenCoder(text: string): RescueOutcome {
  if (!text.includes(FUNCTION_OPEN)) return ABSENT;
  const calls: ToolCall[] = [];
  let position = text.indexOf(FUNCTION_OPEN);
  while (position !== -1) {
    const headerEnd = text.indexOf(">", position);
    if (headerEnd === -1) return garbled("a <function= tag never closes");
    const tool = text.slice(position + FUNCTION_OPEN.length, headerEnd).trim();
    if (tool.length === 0) return garbled("a <function=> tag has no name");
    const bodyEnd = firstOf(text, headerEnd + 1, [FUNCTION_CLOSE, FUNCTION_OPEN]);
    const args = readParameters(text.slice(headerEnd + 1, bodyEnd));
    if (typeof args === "string") return garbled(`function '${tool}': ${args}`);
    calls.push({ tool, args });
    position = text.indexOf(FUNCTION_OPEN, bodyEnd);
  }
  return found(
    calls,
    calls.map((_, index) => index),
  );
}

/** The parameters of one function body as args, or a string saying why they cannot be read. */
function readParameters(body: string): Record<string, string> | string {
  const entries: [string, string][] = [];
  let position = 0;
  for (;;) {
    while (position < body.length && /\s/.test(body[position] ?? "")) position++;
    if (position >= body.length) break;
    if (!body.startsWith(PARAMETER_OPEN, position)) return "text outside <parameter=…> tags";
    const headerEnd = body.indexOf(">", position);
    if (headerEnd === -1) return "a <parameter= tag never closes";
    const key = body.slice(position + PARAMETER_OPEN.length, headerEnd).trim();
    if (key.length === 0) return "a <parameter=> tag has no name";
    if (entries.some(([existing]) => existing === key)) return `parameter '${key}' is given twice`;
    const valueEnd = firstOf(body, headerEnd + 1, [PARAMETER_CLOSE, PARAMETER_OPEN]);
    entries.push([key, readValue(body.slice(headerEnd + 1, valueEnd))]);
    position = body.startsWith(PARAMETER_CLOSE, valueEnd) ? valueEnd + PARAMETER_CLOSE.length : valueEnd;
  }
  // fromEntries defines own properties, so a "__proto__" key cannot touch the prototype.
  return Object.fromEntries(entries);
}

/** The value less one leading and one trailing newline, as Qwen's reference parser reads it. */
function readValue(raw: string): string {
  const start = raw.startsWith("\r\n") ? 2 : raw.startsWith("\n") ? 1 : 0;
  const end = raw.endsWith("\r\n") ? raw.length - 2 : raw.endsWith("\n") ? raw.length - 1 : raw.length;
  return raw.slice(start, Math.max(start, end));
}

/** Index of the first of `markers` at or after `from`, or the text's length when none occurs. */
function firstOf(text: string, from: number, markers: string[]): number {
  const indexes = markers.map((marker) => text.indexOf(marker, from)).filter((index) => index !== -1);
  return indexes.length > 0 ? Math.min(...indexes) : text.length;
}
