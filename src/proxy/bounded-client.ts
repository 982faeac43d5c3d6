/**
 * Bounded retries on the proxy's guarded path (ADR 022): a client around the request's backend
 * client that caps every call after the first at `retryReplyCap` of the first answer's length (until
 * a retry uses its cap up: a call that needed more, a whole file to write after a short prose
 * answer, gets the client's own limit from then on), and
 * cuts off a streamed generation as soon as its text (not a call's arguments, which may repeat on
 * purpose: a file's content) loops (`findDegenerateRepetition`): the
 * generation is aborted, and the loop gets the text up to one copy of the repeated stretch (which
 * it then validates, and nudges on, like any text).
 */
import type { ToolSpec } from "../core/tools.ts";
import {
  ChunkType,
  type LLMClient,
  type LLMResponse,
  type SendOptions,
  type StreamChunk,
  type TokenUsage,
} from "../core/types.ts";
import {
  findDegenerateRepetition,
  type RetryBounds,
  reachedCap,
  retryReplyCap,
} from "../guardrails/bounded-retry.ts";
import { askedReplyTokens } from "./prompt-limit.ts";
import type { RequestStats } from "./request-stats.ts";

/** `client` bounded by `bounds` for one request (counting cut-offs in `stats.degenerate`); `client` itself when there are none. */
export function withRetryBounds(
  client: LLMClient,
  bounds: RetryBounds | undefined,
  extraBody: Record<string, unknown>,
  stats: RequestStats,
): LLMClient {
  if (bounds === undefined) return client;
  return new BoundedRetryClient(client, {
    bounds,
    askedReply: askedReplyTokens(extraBody),
    onDegenerate: () => {
      stats.degenerate += 1;
    },
  });
}

/** Options of `BoundedRetryClient`. */
export interface BoundedRetryOptions {
  bounds: RetryBounds;
  /** The reply length the client asked for (`max_tokens`), which a cap never exceeds. */
  askedReply: number | undefined;
  /** A generation was cut off (or a sent answer cut short) as degenerate. */
  onDegenerate(): void;
}

/** Caps retries and cuts off degenerate repetition; see the module comment. */
export class BoundedRetryClient implements LLMClient {
  readonly apiFormat: LLMClient["apiFormat"];
  readonly #inner: LLMClient;
  readonly #options: BoundedRetryOptions;
  #calls = 0;
  /** The first answer's tokens (the backend's count, else characters / 4). */
  #firstTokens: number | undefined;
  /** The cap the current call was sent with, if any. */
  #cap: number | undefined;
  /** A retry used up its cap: the later ones get the client's whole ask. */
  #lifted = false;

  constructor(inner: LLMClient, options: BoundedRetryOptions) {
    this.apiFormat = inner.apiFormat;
    this.#inner = inner;
    this.#options = options;
  }

  async send(
    messages: Record<string, unknown>[],
    tools?: ToolSpec[],
    options?: SendOptions,
  ): Promise<LLMResponse> {
    const first = this.#calls === 0;
    const usage: { tokens?: number } = {};
    const response = await this.#inner.send(messages, tools, this.#bounded(options, usage));
    this.#answered(first, usage.tokens ?? estimateTokens(response));
    if (Array.isArray(response)) return response;
    const repetition = findDegenerateRepetition(response.content, this.#options.bounds);
    if (repetition === null) return response;
    this.#options.onDegenerate();
    return { content: response.content.slice(0, repetition.start + repetition.period) };
  }

  async *sendStream(
    messages: Record<string, unknown>[],
    tools?: ToolSpec[],
    options?: SendOptions,
  ): AsyncIterable<StreamChunk> {
    const first = this.#calls === 0;
    const usage: { tokens?: number } = {};
    const controller = new AbortController();
    const outer = options?.signal;
    const abort = () => controller.abort(outer?.reason);
    if (outer?.aborted) abort();
    outer?.addEventListener("abort", abort, { once: true });
    const bounded = { ...this.#bounded(options, usage), signal: controller.signal };
    let text = "";
    try {
      for await (const chunk of this.#inner.sendStream(messages, tools, bounded)) {
        if (chunk.type === ChunkType.RETRY) {
          text = "";
        } else if (chunk.type === ChunkType.FINAL && chunk.response !== undefined) {
          this.#answered(first, usage.tokens ?? estimateTokens(chunk.response));
        } else if (chunk.type === ChunkType.TEXT_DELTA && chunk.content) {
          // Text only: a call's arguments (a file's content) may repeat on purpose.
          text += chunk.content;
          const kept = this.#degenerateCut(text);
          if (kept !== null) {
            // The rest of this generation is the same loop: stop paying for it.
            controller.abort(new Error("degenerate repetition"));
            this.#options.onDegenerate();
            if (first) this.#firstTokens = Math.ceil(kept.length / 4);
            // Of this chunk, only what the kept text still holds goes on.
            const before = text.length - chunk.content.length;
            if (kept.length > before) yield { ...chunk, content: kept.slice(before) };
            yield { type: ChunkType.FINAL, response: { content: kept } };
            return;
          }
        }
        yield chunk;
      }
    } finally {
      outer?.removeEventListener("abort", abort);
    }
  }

  getContextLength(): Promise<number | null> {
    return this.#inner.getContextLength();
  }

  /** `options` with a retry's reply capped, and the call's completion tokens recorded into `usage`. */
  #bounded(options: SendOptions | undefined, usage: { tokens?: number }): SendOptions {
    const retry = this.#calls > 0;
    this.#calls += 1;
    const onUsage = (reported: TokenUsage) => {
      if (reported.completionTokens !== undefined) usage.tokens = reported.completionTokens;
      options?.onUsage?.(reported);
    };
    const withUsage: SendOptions = { ...options, onUsage };
    this.#cap = undefined;
    if (!retry || this.#lifted) return withUsage;
    const asked = options?.sampling?.maxTokens ?? this.#options.askedReply;
    const maxTokens = retryReplyCap(this.#firstTokens, asked, this.#options.bounds);
    if (maxTokens !== asked) this.#cap = maxTokens;
    return maxTokens === undefined
      ? withUsage
      : { ...withUsage, sampling: { ...options?.sampling, maxTokens } };
  }

  /** Record an answer's tokens: the first answer's sets the cap; a retry that reached its cap lifts it. */
  #answered(first: boolean, tokens: number): void {
    if (first) this.#firstTokens = tokens;
    if (reachedCap(tokens, this.#cap)) this.#lifted = true;
  }

  /** The text to keep when `text` ends in a degenerate repetition (one copy of it); null otherwise. */
  #degenerateCut(text: string): string | null {
    const repetition = findDegenerateRepetition(text, this.#options.bounds);
    return repetition === null ? null : text.slice(0, repetition.start + repetition.period);
  }
}

function estimateTokens(response: LLMResponse): number {
  const text = Array.isArray(response) ? JSON.stringify(response) : response.content;
  return Math.ceil(text.length / 4);
}
