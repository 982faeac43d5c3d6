/**
 * Rescue LFM2 calls: `<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>`, the list
 * pythonic or JSON.
 */

import type { ToolCall } from "../../core/types.ts";
import { readToolCalls } from "./call-shape.ts";
import { tryParseJson } from "./json-scan.ts";
import { markedBlocks } from "./marked-blocks.ts";
import { ABSENT, found, garbled, type RescueOutcome } from "./outcome.ts";
import { readCallList, skipSpace } from "./python-literal.ts";

const OPEN = "<|tool_call_start|>";
const CLOSE = "<|tool_call_end|>";

/**
 * Rescue the calls of every `<|tool_call_start|>` block in `text`, in order.
 *
 * A block holds a pythonic list `[name(k=v), …]` (LFM2's own format) or JSON calls (what it writes
 * when llama.cpp's "force json schema" asks for JSON). It runs to `<|tool_call_end|>`, or — cut off
 * — to the next start token or the end. Text after the end token (LFM2 often says what it is
 * doing) is ignored. A block that is not wholly readable calls makes the text `garbled`.
 * @example
 * parseLfm2('<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>Checking the weather.')
 * // { status: "found", calls: [{ tool: "get_weather", args: { city: "Paris" } }] }
 */
export function parseLfm2(text: string): RescueOutcome {
  if (!text.includes(OPEN)) return ABSENT;
  const calls: ToolCall[] = [];
  for (const body of markedBlocks(text, OPEN, CLOSE)) {
    const block = readBlock(body.trim());
    if (block.status !== "found") return block.status === "garbled" ? block : garbled(`an empty ${OPEN}`);
    calls.push(...block.calls);
  }
  return found(calls);
}

function readBlock(body: string): RescueOutcome {
  const parsed = tryParseJson(body);
  if (parsed.ok) {
    const reading = readToolCalls(parsed.value);
    if (reading.kind === "calls") return found(reading.calls);
    return garbled(reading.kind === "invalid" ? reading.reason : `JSON in ${OPEN} is not a tool call`);
  }
  if (body.length === 0) return ABSENT;
  const list = readCallList(body, 0);
  if (!list.ok) return garbled(`the calls in ${OPEN} cannot be read: ${list.reason}`);
  if (skipSpace(body, list.end) < body.length) return garbled(`text follows the call list in ${OPEN}`);
  return found(list.value);
}
