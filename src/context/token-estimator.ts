/**
 * Token estimation: a cheap character heuristic, swappable for a real tokenizer.
 */
import type { Message } from "../core/messages.ts";

/**
 * Estimates how many prompt tokens one message costs.
 * Must be pure and deterministic: results are cached per message object.
 */
export type TokenEstimator = (message: Message) => number;

/**
 * Tokens charged per message on top of its text: the role header and turn delimiters a chat
 * template wraps every message in (`<|im_start|>assistant\n … <|im_end|>\n` is about 4).
 */
export const MESSAGE_OVERHEAD_TOKENS = 4;

/** Characters per token the default heuristic assumes (English prose and JSON average ~4). */
export const CHARS_PER_TOKEN = 4;

/**
 * Default estimator: `ceil(chars / 4)` over the content plus the JSON of its tool calls, plus
 * {@link MESSAGE_OVERHEAD_TOKENS}. Shorter content never costs more, so dropping or truncating
 * never raises the estimate.
 * @example estimateTokensByChars(createMessage("user", "Weather in Paris?", { type: "user_input" })) // 5 + 4
 */
export function estimateTokensByChars(message: Message): number {
  const toolCalls = message.toolCalls;
  const toolCallChars = toolCalls && toolCalls.length > 0 ? JSON.stringify(toolCalls).length : 0;
  return Math.ceil((message.content.length + toolCallChars) / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD_TOKENS;
}
