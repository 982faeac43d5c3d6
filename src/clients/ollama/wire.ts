/**
 * Ollama's `/api/chat` wire: zod schemas of the answer and of each NDJSON stream line, and the
 * line splitter for its streams.
 */
import { z } from "zod";
import type { TokenUsage } from "../../core/types.ts";
import type { Exchange } from "../http.ts";
import { isNullishString, isPlainObject } from "../wire.ts";

const ollamaToolCallSchema = z.object({
  function: z.object({
    name: z.string(),
    // Objects on Ollama's wire; a string is accepted and decoded like OpenAI's.
    arguments: z.union([z.record(z.string(), z.unknown()), z.string()]).nullish(),
  }),
});

const ollamaMessageSchema = z.object({
  content: z.string().nullish(),
  thinking: z.string().nullish(),
  tool_calls: z.array(ollamaToolCallSchema).nullish(),
});

/** A non-streamed `/api/chat` answer, or one line of a streamed one (the last has `done: true`). */
export const ollamaChatSchema = z.object({
  message: ollamaMessageSchema.nullish(),
  done: z.boolean(),
  done_reason: z.string().nullish(),
  /** Prompt tokens Ollama evaluated (on the final line). */
  prompt_eval_count: z.number().nullish(),
  /** Tokens Ollama generated (on the final line). */
  eval_count: z.number().nullish(),
});

/** The usage an Ollama answer's final line reports (`prompt_eval_count`, `eval_count`), or null. */
export function ollamaUsage(chat: OllamaChat | undefined): TokenUsage | null {
  const prompt = chat?.prompt_eval_count;
  if (typeof prompt !== "number") return null;
  const completion = chat?.eval_count;
  return { promptTokens: prompt, ...(typeof completion === "number" && { completionTokens: completion }) };
}
/** A parsed `/api/chat` answer or stream line. */
export type OllamaChat = z.output<typeof ollamaChatSchema>;

/**
 * True when `value` passes `ollamaChatSchema` as it is: a hand-written check that lets the usual
 * well-formed line skip zod (every stream line is checked). Anything it rejects goes to zod, which
 * decides and names the bad field.
 */
export function isOllamaChat(value: unknown): value is OllamaChat {
  if (!isPlainObject(value) || typeof value.done !== "boolean" || !isNullishString(value.done_reason)) {
    return false;
  }
  const message = value.message;
  if (message === undefined || message === null) return true;
  if (!isPlainObject(message) || !isNullishString(message.content) || !isNullishString(message.thinking)) {
    return false;
  }
  const calls = message.tool_calls;
  return calls === undefined || calls === null || (Array.isArray(calls) && calls.every(isOllamaToolCall));
}

function isOllamaToolCall(value: unknown): boolean {
  if (!isPlainObject(value) || !isPlainObject(value.function)) return false;
  const { name, arguments: args } = value.function;
  return typeof name === "string" && (isNullishString(args) || isPlainObject(args));
}

/** An error Ollama reports, as the body of an HTTP error or as a line of a stream. */
export const ollamaErrorSchema = z.object({ error: z.string() });

/** The answer to `/api/generate` with `keep_alive: 0` (unload). */
export const ollamaGenerateSchema = z.object({ done: z.boolean(), done_reason: z.string().nullish() });

/**
 * The non-empty lines of an NDJSON body, as they arrive; a last line without newline counts too.
 * Stopping early leaves the exchange open: the caller closes or releases it.
 */
export async function* ndjsonLines(exchange: Exchange): AsyncGenerator<string> {
  let buffer = "";
  for (let text = await exchange.read(); text !== null; text = await exchange.read()) {
    buffer += text;
    let start = 0;
    for (let newline = buffer.indexOf("\n"); newline !== -1; newline = buffer.indexOf("\n", start)) {
      const line = buffer.slice(start, newline).trim();
      start = newline + 1;
      if (line.length > 0) yield line;
    }
    buffer = buffer.slice(start);
  }
  if (buffer.trim().length > 0) yield buffer.trim();
}

/** Model families that think on Ollama; `think: "auto"` sends `think: true` only for these. */
const THINKING_FAMILIES =
  /^(?:qwen3(?!-coder)|qwq|deepseek-r1|deepseek-v3\.1|magistral|gpt-oss|phi4(?:-mini)?-reasoning|exaone-deep)/;

/**
 * True when Ollama's name for a model belongs to a family known to think (qwen3 except the coder
 * models, qwq, deepseek-r1, magistral, gpt-oss, phi4-reasoning, …).
 * @example isKnownThinkingModel("qwen3:8b") // true
 */
export function isKnownThinkingModel(model: string): boolean {
  const name = model.toLowerCase().split("/").pop() ?? "";
  return THINKING_FAMILIES.test(name);
}

/** True for Ollama's answer to `think: true` on a model without the thinking capability. */
export function isThinkingUnsupported(status: number, body: string): boolean {
  return status === 400 && /does not support thinking/i.test(body);
}
