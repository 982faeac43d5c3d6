/**
 * Rescue Hermes/Qwen2.5 calls: `<tool_call>{"name": …, "arguments": …}</tool_call>`, one or several.
 */

import type { ToolCall } from "../../core/types.ts";
import { readToolCalls } from "./call-shape.ts";
import { tryParseJson } from "./json-scan.ts";
import { markedBlocks } from "./marked-blocks.ts";
import { ABSENT, found, garbled, type RescueOutcome } from "./outcome.ts";
import { parseQwenCoder } from "./qwen-coder.ts";

const OPEN = "<tool_call>";
const CLOSE = "</tool_call>";
/** A code fence some models put inside the tags. */
const INNER_FENCE = /^```[\w-]*[ \t]*\r?\n?([\s\S]*?)\r?\n?```$/;

/**
 * Rescue the calls of every `<tool_call>` block in `text`, in order.
 *
 * Each block holds one JSON call (or an array of calls), optionally inside a code fence, or
 * Qwen3-Coder's `<function=…>` XML. A block runs to its `</tool_call>`, or — when the model
 * stopped before closing it — to the next `<tool_call>` or the end of the output. A block that
 * is not exactly one readable call makes the text `garbled`.
 * @example
 * parseHermes('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>')
 * // { status: "found", calls: [{ tool: "get_weather", args: { city: "Paris" } }] }
 */
export function parseHermes(text: string): RescueOutcome {
  if (!text.includes(OPEN)) return ABSENT;
  const calls: ToolCall[] = [];
  const textValued: number[] = [];
  for (const body of markedBlocks(text, OPEN, CLOSE)) {
    const block = readBlock(body);
    if (block.status !== "found") return block.status === "garbled" ? block : garbled("an empty <tool_call>");
    for (const index of block.textValued ?? []) textValued.push(calls.length + index);
    calls.push(...block.calls);
  }
  return found(calls, textValued);
}

function readBlock(raw: string): RescueOutcome {
  const trimmed = raw.trim();
  const body = (INNER_FENCE.exec(trimmed)?.[1] ?? trimmed).trim();
  if (body.startsWith("<function=")) return parseQwenCoder(body);
  const parsed = tryParseJson(body);
  if (!parsed.ok) return garbled("a <tool_call> does not hold valid JSON");
  const reading = readToolCalls(parsed.value);
  if (reading.kind === "invalid") return garbled(reading.reason);
  if (reading.kind === "not-a-call") return garbled("a <tool_call> holds JSON that is not a tool call");
  return found(reading.calls);
}
