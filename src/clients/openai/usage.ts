/**
 * Token usage of an OpenAI-compatible answer: `usage` (with llama-server's cache hits in
 * `prompt_tokens_details.cached_tokens`), or llama-server's `timings` on a stream sent without
 * `stream_options.include_usage`.
 */
import type { TokenUsage } from "../../core/types.ts";

/**
 * The usage an answer body or stream chunk reports, or null when it reports none.
 * `timings` counts the prompt as `cache_n` (reused from the KV cache) + `prompt_n` (evaluated).
 * @example usageOfAnswer({ usage: { prompt_tokens: 23, prompt_tokens_details: { cached_tokens: 22 } } })
 * // { promptTokens: 23, cachedTokens: 22 }
 */
export function usageOfAnswer(body: unknown): TokenUsage | null {
  if (!isRecord(body)) return null;
  const { usage, timings } = body;
  if (isRecord(usage) && isCount(usage.prompt_tokens)) {
    const details = usage.prompt_tokens_details;
    const cached = isRecord(details) && isCount(details.cached_tokens) ? details.cached_tokens : undefined;
    return {
      promptTokens: usage.prompt_tokens,
      ...(cached !== undefined && { cachedTokens: cached }),
      ...(isCount(usage.completion_tokens) && { completionTokens: usage.completion_tokens }),
    };
  }
  if (isRecord(timings) && isCount(timings.prompt_n) && isCount(timings.cache_n)) {
    return {
      promptTokens: timings.prompt_n + timings.cache_n,
      cachedTokens: timings.cache_n,
      ...(isCount(timings.predicted_n) && { completionTokens: timings.predicted_n }),
    };
  }
  return null;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}

/** Pass the usage `body` reports to `onUsage`, when there is both. */
export function reportUsage(body: unknown, onUsage: ((usage: TokenUsage) => void) | undefined): void {
  if (!onUsage) return;
  const usage = usageOfAnswer(body);
  if (usage) onUsage(usage);
}
