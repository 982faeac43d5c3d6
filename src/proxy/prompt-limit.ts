/**
 * The proxy's prompt limit per request: the context window less a small reply reserve, the
 * reply's `max_tokens` clamped to what the prompt leaves of the window, and exact
 * prompt counts from the backend's tokenizer (llama-server `/apply-template` + `/tokenize`) when
 * it has one, so compaction decides on real tokens (tools included) and a prompt that still does
 * not fit is refused as `context_length_exceeded` before it reaches the backend.
 */
import type { PromptTokenizer } from "../clients/llama-server/tokenizer.ts";
import { BackendError, ContextBudgetExceeded } from "../core/errors.ts";
import { type ToolSpec, toOpenAITool } from "../core/tools.ts";
import type { LLMClient, LLMResponse, SendOptions, StreamChunk } from "../core/types.ts";

/** The reply reserve when the request asks less: an eighth of the window, at most this. */
export const DEFAULT_REPLY_RESERVE_TOKENS = 1024;

/** How long the proxy counts by estimate after the tokenizer failed for a reason other than 404. */
const TOKENIZER_RETRY_MS = 60_000;

/**
 * Tokens kept free for the reply when setting the prompt limit: `min(1024, window / 8)`, or the
 * request's `max_tokens` (or `max_completion_tokens`) when it asks for less; never more than the
 * window less one token. A larger `max_tokens` is not reserved: agents send 32,000 whatever the
 * window, and reserving it would leave no room for the prompt. The reply is clamped instead to
 * what the prompt leaves ({@link clampReplyTokens}), as llama-server stops at its window.
 */
export function replyReserve(extraBody: Record<string, unknown>, windowTokens: number): number {
  const fallback = Math.min(DEFAULT_REPLY_RESERVE_TOKENS, Math.floor(windowTokens / 8));
  const asked = askedReplyTokens(extraBody);
  return Math.max(0, Math.min(asked ?? fallback, fallback, windowTokens - 1));
}

/** The reply length the request asks for: `max_completion_tokens`, else `max_tokens`; undefined when neither is a positive integer. */
export function askedReplyTokens(extraBody: Record<string, unknown>): number | undefined {
  return [extraBody.max_completion_tokens, extraBody.max_tokens].find(
    (value): value is number => typeof value === "number" && Number.isInteger(value) && value > 0,
  );
}

/**
 * The reply length to send for a prompt of `promptTokens`: what the client asked, at most what the
 * window leaves after the prompt, and never clamped below `reserve` (an estimated prompt may be
 * overcounted). Undefined when the client asked nothing or its ask fits as it is.
 * @example
 * clampReplyTokens(32_000, { windowTokens: 32_768, promptTokens: 5_000, reserve: 1024 }); // 27_768
 */
export function clampReplyTokens(
  asked: number | undefined,
  limits: { windowTokens: number; promptTokens: number; reserve: number },
): number | undefined {
  if (asked === undefined) return undefined;
  const room = Math.max(limits.windowTokens - limits.promptTokens, limits.reserve, 1);
  return asked > room ? room : undefined;
}

/**
 * Estimated tokens of a prompt: the characters of its wire messages' and tools' JSON over four
 * (the JSON keys stand in for what the chat template adds).
 */
export function estimatePromptTokens(
  messages: readonly Record<string, unknown>[],
  tools: readonly ToolSpec[],
): number {
  const json = JSON.stringify({ messages, ...(tools.length > 0 && { tools: tools.map(toOpenAITool) }) });
  return Math.ceil(json.length / 4);
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

/** The limits a {@link PromptLimitedClient} enforces for one request. */
export interface PromptLimits {
  /** The most prompt tokens sent (window less the reply reserve). */
  promptLimit: number;
  /** The context window. */
  windowTokens: number;
  /** The reply reserve the prompt limit keeps ({@link replyReserve}). */
  reserve: number;
  /** The reply length the client asked for, clamped per call to what the prompt leaves. */
  askedReply: number | undefined;
}

/**
 * What the caller knows of the first prompt sent: `{ tokens }` when it counted that very prompt
 * (`tokens: null`: it need not be counted, it is far under the limit), null when it must be counted.
 */
export type FirstPromptCount = () => { tokens: number | null } | null;

/**
 * A client that counts each request's prompt exactly before sending it and throws
 * `ContextBudgetExceeded` (real tokens, the prompt limit) instead of sending one that does not
 * fit, and clamps the reply's `max_tokens` to what the prompt leaves of the window (on the exact
 * count, else an estimate).
 */
export class PromptLimitedClient implements LLMClient {
  readonly apiFormat: LLMClient["apiFormat"];
  readonly #inner: LLMClient;
  readonly #counter: ExactCounter;
  readonly #limits: PromptLimits;
  #firstCount: FirstPromptCount;

  constructor(inner: LLMClient, counter: ExactCounter, limits: PromptLimits, firstCount: FirstPromptCount) {
    this.apiFormat = inner.apiFormat;
    this.#inner = inner;
    this.#counter = counter;
    this.#limits = limits;
    this.#firstCount = firstCount;
  }

  async send(
    messages: Record<string, unknown>[],
    tools?: ToolSpec[],
    options?: SendOptions,
  ): Promise<LLMResponse> {
    return this.#inner.send(messages, tools, await this.#check(messages, tools, options));
  }

  async *sendStream(
    messages: Record<string, unknown>[],
    tools?: ToolSpec[],
    options?: SendOptions,
  ): AsyncIterable<StreamChunk> {
    yield* this.#inner.sendStream(messages, tools, await this.#check(messages, tools, options));
  }

  getContextLength(): Promise<number | null> {
    return this.#inner.getContextLength();
  }

  /** Refuse a prompt over the limit; the options with the reply clamped when it must be. */
  async #check(
    messages: Record<string, unknown>[],
    tools: ToolSpec[] | undefined,
    options: SendOptions | undefined,
  ): Promise<SendOptions | undefined> {
    const known = this.#firstCount();
    this.#firstCount = () => null;
    const tokens =
      known !== null
        ? known.tokens
        : await this.#counter.count(messages, tools ?? [], options?.signal ?? new AbortController().signal);
    const { promptLimit, windowTokens, reserve, askedReply } = this.#limits;
    if (tokens !== null && tokens > promptLimit) throw new ContextBudgetExceeded(tokens, promptLimit);
    if (askedReply === undefined) return options;
    const promptTokens = tokens ?? estimatePromptTokens(messages, tools ?? []);
    const maxTokens = clampReplyTokens(askedReply, { windowTokens, promptTokens, reserve });
    if (maxTokens === undefined) return options;
    return { ...options, sampling: { ...options?.sampling, maxTokens } };
  }
}
