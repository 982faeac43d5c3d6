/**
 * How much of a streamed text answer may reach the client before the answer is validated: the
 * text up to the first place where it could still turn into a tool call the rescue would read
 * (ADR 014). A pure decision over the text so far; `LiveTextClient` applies it.
 */

/**
 * Markers of the rescue's formats (`src/prompts/rescue/`) that start a call wherever they stand:
 * Hermes/Qwen `<tool_call>`, Mistral `[TOOL_CALLS]`, the rehearsal form's `[ARGS]`, Qwen-Coder
 * `<function=`, FunctionGemma `<start_function_call>`, code fences (JSON and ```tool_code), every
 * special token `<|…` (Llama `<|python_tag|>`, LFM2 `<|tool_call_start|>`, Gemma `<|tool_call>`,
 * harmony `<|channel|>`), harmony's `to=functions.`, and thinking blocks (`<think>`, `[THINK]`),
 * which are not the answer's text.
 */
export const CALL_MARKERS: readonly string[] = [
  "<tool_call>",
  "[TOOL_CALLS]",
  "[ARGS]",
  "<function=",
  "<start_function_call>",
  "```",
  "<|",
  "to=functions.",
  "<think>",
  "[THINK]",
];

/**
 * What starts a call when it opens a line (after spaces and tabs): bare JSON `{`, a JSON or
 * pythonic list `[`, FunctionGemma's bare `call:`, and a pythonic call `name(` of a known tool.
 */
function lineStartPatterns(toolNames: readonly string[]): string[] {
  return ["{", "[", "call:", ...toolNames.map((name) => `${name}(`)];
}

/** The decision for the text of one attempt so far. */
export interface GateDecision {
  /** Characters of the text that may be sent (those before it were sent already or are sent now). */
  sendable: number;
  /** A marker starts at `sendable`: the rest of the attempt is held until it is validated. */
  marked: boolean;
}

/**
 * How many leading characters of `text` may go to the client: all of them, unless a call marker
 * starts in it (then up to the marker, `marked`), or its end could still become one (a partial
 * marker, or a line so far that a line-start pattern could continue: then up to that prefix).
 * Text that is only blank so far is held too (none of it may go out).
 * `from` is where the previous decision's sendable text ended; the text before it is not searched
 * again beyond the length of the longest marker.
 * @example
 * gateText("Sure. <tool_call>{", ["get_weather"]) // { sendable: 6, marked: true }
 * gateText("Hello <tool", ["get_weather"])        // { sendable: 6, marked: false }
 */
export function gateText(text: string, toolNames: readonly string[], from = 0): GateDecision {
  const patterns = lineStartPatterns(toolNames);
  let sendable = text.length;
  let marked = false;
  const searchFrom = Math.max(0, from - LONGEST_MARKER);
  for (const marker of CALL_MARKERS) {
    const at = text.indexOf(marker, searchFrom);
    if (at !== -1 && at < sendable) {
      sendable = at;
      marked = true;
    }
  }
  // Line starts: a line that opens with a pattern is a marker; one still short of deciding is held.
  for (let lineStart = lineStartBefore(text, searchFrom); lineStart <= text.length; ) {
    if (lineStart >= sendable) break;
    let content = lineStart;
    while (text[content] === " " || text[content] === "\t") content += 1;
    const lineEnd = text.indexOf("\n", content);
    const line = text.slice(content, lineEnd === -1 ? text.length : lineEnd);
    const opens = patterns.some((pattern) => line.startsWith(pattern));
    if (opens) {
      sendable = Math.min(sendable, lineStart);
      marked = true;
      break;
    }
    const undecided = lineEnd === -1 && patterns.some((pattern) => pattern.startsWith(line));
    if (undecided) sendable = Math.min(sendable, lineStart);
    if (lineEnd === -1) break;
    lineStart = lineEnd + 1;
  }
  if (!marked) sendable = Math.min(sendable, text.length - partialMarkerAtEnd(text));
  // Blank text alone says nothing yet: held, so an answer that is a call does not start with it.
  if (text.slice(0, sendable).trim().length === 0) sendable = 0;
  return { sendable, marked };
}

const LONGEST_MARKER = Math.max(...CALL_MARKERS.map((marker) => marker.length));

/** The start of the line that holds `index` (0 or just after a newline). */
function lineStartBefore(text: string, index: number): number {
  if (index <= 0) return 0;
  return text.lastIndexOf("\n", index - 1) + 1;
}

/** The length of the longest proper prefix of a marker that `text` ends with (0: none). */
function partialMarkerAtEnd(text: string): number {
  let longest = 0;
  for (const marker of CALL_MARKERS) {
    for (let length = Math.min(marker.length - 1, text.length); length > longest; length -= 1) {
      if (text.endsWith(marker.slice(0, length))) {
        longest = length;
        break;
      }
    }
  }
  return longest;
}
