/**
 * Calls inside unclosed reasoning (docs/decisions/027-calls-in-unclosed-reasoning.md): a model
 * that opens `<think>` (or `[THINK]`), writes the call it settled on, and stops before closing the
 * block leaves an answer the rescue drops as reasoning. Read such a call, under a narrow rule:
 * - the answer is reasoning only: nothing outside the blocks, and the last block is never closed;
 * - the reasoning ends with the call: after the call's last character only whitespace (and the
 *   markup that closes it, `</tool_call>`, a fence), never a further word of thought;
 * - the call is complete and names offered tools: the rescue's own parsers read it whole (the
 *   final call block: several blocks in a row are one batch, prose between blocks ends it).
 * Pure; the proxy applies it only when asked (`--think-calls`).
 */
import { type RescuedCalls, type RescueOptions, rescueWithNames } from "./index.ts";
import { stripThinking } from "./thinking.ts";

const TAG_PAIRS: readonly (readonly [open: string, close: string])[] = [
  ["<think>", "</think>"],
  ["[THINK]", "[/THINK]"],
];

/** How a complete call's text may end: its JSON, arguments or closing markup. */
const CALL_END =
  /(?:[}\])]|<\/tool_call>|<\/tool_calls>|<\/function>|<\|tool_call_end\|>|<\|tool_calls_section_end\|>|```|<\|call\|>|<\|eom_id\|>|<end_function_call>)$/;
/** A line that only closes the call before it. */
const CLOSING_LINE =
  /^(?:<\/tool_call>|<\/tool_calls>|<\/function>|<\|tool_call_end\|>|```|[}\])]+|<\|call\|>|<\|eom_id\|>|<end_function_call>)$/;
/** A line a call block starts with: call markup, JSON, or a name with its arguments. */
const CALL_START =
  /^(?:<tool_call>|<tool_calls>|<function=|\[TOOL_CALLS\]|<\|python_tag\|>|<\|tool_call_start\|>|<\|tool_calls_section_begin\|>|<start_function_call>|```|\{|\[|[\w.-]+\s*[([{])/;

/** A line that only opens the call after it. */
const OPENING_LINE =
  /^(?:<tool_call>|<tool_calls>|\[TOOL_CALLS\]|<\|python_tag\|>|<\|tool_call_start\|>|<\|tool_calls_section_begin\|>|<start_function_call>|```[\w-]*)$/;

/**
 * The text of the last reasoning block when `text` is reasoning only and that block was never
 * closed; null otherwise (an answer outside the reasoning, every block closed, no block).
 * @example unclosedReasoning("<think>Let me look.\n<tool_call>…") // "Let me look.\n<tool_call>…"
 */
export function unclosedReasoning(text: string): string | null {
  if (stripThinking(text).trim().length > 0) return null;
  for (const [open, close] of TAG_PAIRS) {
    const start = text.lastIndexOf(open);
    if (start !== -1 && text.indexOf(close, start) === -1) return text.slice(start + open.length);
  }
  return null;
}

/**
 * The calls written at the end of unclosed reasoning (see the module comment), or null when the
 * rule does not hold: then the reasoning stays dropped, as before.
 * @example
 * readThinkCall('<think>The user wants Paris weather.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', ["get_weather"])
 * // { calls: [{ tool: "get_weather", args: { city: "Paris" } }], renamed: 0 }
 */
export function readThinkCall(
  text: string,
  toolNames: readonly string[],
  options: RescueOptions = {},
): RescuedCalls | null {
  const reasoning = unclosedReasoning(text)?.trimEnd();
  if (!reasoning || toolNames.length === 0 || !CALL_END.test(reasoning)) return null;
  const starts = lineStarts(reasoning);
  // The shortest tail, from a line start, that the rescue reads: the last call block.
  let tailIndex = starts.length - 1;
  let read: RescuedCalls | null = null;
  for (; tailIndex >= 0; tailIndex--) {
    read = readBlock(reasoning.slice(starts[tailIndex]), toolNames, options);
    if (read !== null) break;
  }
  if (read === null) return null;
  tailIndex = withOpeningLines(reasoning, starts, tailIndex);
  read = readBlock(reasoning.slice(starts[tailIndex]), toolNames, options) ?? read;
  if (endsWithThought(reasoning.slice(starts[tailIndex]), read, toolNames, options)) return null;
  // Blocks right before it, with nothing but blank lines between, belong to the same batch.
  let batchStart = starts[tailIndex] as number;
  for (let index = tailIndex - 1; index >= 0; index--) {
    const block = reasoning.slice(starts[index], batchStart);
    if (block.trim().length === 0) continue;
    const earlier = readBlock(block, toolNames, options);
    if (earlier === null) continue;
    if (!CALL_END.test(block.trimEnd()) || endsWithThought(block, earlier, toolNames, options)) break;
    index = withOpeningLines(reasoning, starts, index);
    batchStart = starts[index] as number;
  }
  if (batchStart === starts[tailIndex]) return read;
  return readBlock(reasoning.slice(batchStart), toolNames, options) ?? read;
}

/** The calls of a block that starts like a call; null for prose, or no complete call. */
function readBlock(block: string, toolNames: readonly string[], options: RescueOptions): RescuedCalls | null {
  if (!CALL_START.test(block.trimStart())) return null;
  return rescueWithNames(block, toolNames, options);
}

/**
 * Whether the block's last line is more thought rather than part of its call: the block without
 * that line still reads as the same calls, and the line does not just close them.
 */
function endsWithThought(
  block: string,
  read: RescuedCalls,
  toolNames: readonly string[],
  options: RescueOptions,
): boolean {
  const trimmed = block.trimEnd();
  const cut = trimmed.lastIndexOf("\n");
  if (cut === -1) return false;
  const lastLine = trimmed.slice(cut + 1).trim();
  if (CLOSING_LINE.test(lastLine)) return false;
  const without = rescueWithNames(trimmed.slice(0, cut), toolNames, options);
  return without !== null && JSON.stringify(without.calls) === JSON.stringify(read.calls);
}

/** The first of the lines before line `index` that only open its call (a `<tool_call>` line), or `index`. */
function withOpeningLines(text: string, starts: readonly number[], index: number): number {
  let first = index;
  while (first > 0 && OPENING_LINE.test(text.slice(starts[first - 1], starts[first]).trim())) first -= 1;
  return first;
}

/** Where each line of `text` starts, the first at 0. */
function lineStarts(text: string): number[] {
  const starts = [0];
  for (let index = text.indexOf("\n"); index !== -1; index = text.indexOf("\n", index + 1)) {
    starts.push(index + 1);
  }
  return starts;
}
