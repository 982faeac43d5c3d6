/**
 * The proxy's prompt limit per request: the context window less the reply's reserve, and exact
 * prompt counts from the backend's tokenizer (llama-server `/apply-template` + `/tokenize`) when
 * it has one, so compaction decides on real tokens (tools included) and a prompt that still does
 * not fit is refused as `context_length_exceeded` before it reaches the backend.
 */
import type { PromptTokenizer } from "../clients/llama-server-tokenizer.ts";
import { BackendError, ContextBudgetExceeded } from "../core/errors.ts";
import type { ToolSpec } from "../core/tools.ts";
import type { LLMClient, LLMResponse, SendOptions, StreamChunk } from "../core/types.ts";

/** The reply reserve when the request sets no `max_tokens`: an eighth of the window, at most this. */
export const DEFAULT_REPLY_RESERVE_TOKENS = 1024;

/** How long the proxy counts by estimate after the tokenizer failed for a reason other than 404. */
const TOKENIZER_RETRY_MS = 60_000;

/**
 * Tokens kept free for the reply: the request's `max_tokens` (or `max_completion_tokens`), else
 * `min(1024, window / 8)`; never more than the window less one token.
 */
export function replyReserve(extraBody: Record<string, unknown>, windowTokens: number): number {
  const asked = [extraBody.max_completion_tokens, extraBody.max_tokens].find(
    (value): value is number => typeof value === "number" && Number.isInteger(value) && value > 0,
  );
  const reserve = asked ?? Math.min(DEFAULT_REPLY_RESERVE_TOKENS, Math.floor(windowTokens / 8));
  return Math.min(reserve, windowTokens - 1);
}

/** Exact counts while the backend's tokenizer answers; null when it has none or it failed. */
export interface ExactCounter {
  /** Whether `count` would ask the tokenizer now (false: it answers null at once). */
  readonly enabled: boolean;
  count(
    messages: readonly Record<string, unknown>[],
    tools: readonly ToolSpec[],
    signal: AbortSignal,
  ): Promise<number | null>;
}

/**
 * Wraps a backend's tokenizer: a 404 (not llama-server) or an answer that is not a count turns
 * exact counting off for good; any other failure (a restart, a timeout) for a minute. A client
 * abort is rethrown.
 */
export function createExactCounter(tokenizer: PromptTokenizer | undefined): ExactCounter {
  let offUntil = tokenizer ? 0 : Number.POSITIVE_INFINITY;
  return {
    get enabled() {
      return tokenizer !== undefined && Date.now() >= offUntil;
    },
    async count(messages, tools, signal) {
      if (!tokenizer || Date.now() < offUntil) return null;
      try {
        return await tokenizer.countPrompt(messages, tools, signal);
      } catch (error) {
        if (signal.aborted) throw error;
        const permanent = !(error instanceof BackendError) || error.statusCode === 404;
        offUntil = permanent ? Number.POSITIVE_INFINITY : Date.now() + TOKENIZER_RETRY_MS;
        return null;
      }
    },
  };
}

/**
 * A client that counts each request's prompt exactly before sending it and throws
 * `ContextBudgetExceeded` (real tokens, the prompt limit) instead of sending one that does not
 * fit. `skipFirst` skips the count of the first request when the caller counted that very prompt.
 */
export class PromptLimitedClient implements LLMClient {
  readonly apiFormat: LLMClient["apiFormat"];
  readonly #inner: LLMClient;
  readonly #counter: ExactCounter;
  readonly #promptLimit: number;
  #skipNext: () => boolean;

  constructor(inner: LLMClient, counter: ExactCounter, promptLimit: number, skipFirst: () => boolean) {
    this.apiFormat = inner.apiFormat;
    this.#inner = inner;
    this.#counter = counter;
    this.#promptLimit = promptLimit;
    this.#skipNext = skipFirst;
  }

  async send(
    messages: Record<string, unknown>[],
    tools?: ToolSpec[],
    options?: SendOptions,
  ): Promise<LLMResponse> {
    await this.#check(messages, tools, options);
    return this.#inner.send(messages, tools, options);
  }

  async *sendStream(
    messages: Record<string, unknown>[],
    tools?: ToolSpec[],
    options?: SendOptions,
  ): AsyncIterable<StreamChunk> {
    await this.#check(messages, tools, options);
    yield* this.#inner.sendStream(messages, tools, options);
  }

  getContextLength(): Promise<number | null> {
    return this.#inner.getContextLength();
  }

  async #check(
    messages: Record<string, unknown>[],
    tools: ToolSpec[] | undefined,
    options: SendOptions | undefined,
  ): Promise<void> {
    const skip = this.#skipNext();
    this.#skipNext = () => false;
    if (skip) return;
    const tokens = await this.#counter.count(
      messages,
      tools ?? [],
      options?.signal ?? new AbortController().signal,
    );
    if (tokens !== null && tokens > this.#promptLimit)
      throw new ContextBudgetExceeded(tokens, this.#promptLimit);
  }
}
