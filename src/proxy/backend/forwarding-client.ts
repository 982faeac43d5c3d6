/**
 * The `LLMClient` the proxy sends each guarded request through to an OpenAI-compatible backend.
 * It is the client's own request body with the history and tools replaced, so sampling
 * parameters and unknown fields reach the backend untouched. The exchange is
 * `OpenAICompatibleClient`'s own (`OpenAIChatExchange`: request body, native/prompt/auto
 * negotiation, rescue of llama-server's tool-call parse failures, error answers mapped to
 * `BackendError`), over the proxy's transport (`BackendTransport`: one keep-alive pool, 502/504
 * mapping of transport failures).
 */

import { openAISamplingFields } from "../../clients/call-sampling.ts";
import {
  type ChatAnswer,
  type ChatRequest,
  type ChatTransport,
  OpenAIChatExchange,
  type TokenChoice,
  type ToolCallingMode,
  ToolModeNegotiation,
} from "../../clients/openai/chat-exchange.ts";
import { openAIToolChoice } from "../../clients/tool-choice.ts";
import type { ToolSpec } from "../../core/tools.ts";
import {
  ChunkType,
  type LLMClient,
  type LLMResponse,
  type SendOptions,
  type StreamChunk,
} from "../../core/types.ts";
import type { ForwardRequest } from "./backend.ts";
import type { BufferedAnswer } from "./transport.ts";

/** Path of the chat endpoint on an OpenAI-compatible server root. */
export const CHAT_PATH = "/v1/chat/completions";

/** How tools reach the model: the server's function calling, the system prompt, or native first. */
export type ProxyToolMode = ToolCallingMode;

/**
 * Backend-wide state the per-request clients share: the exchange over the proxy's transport, with
 * the tool mode it negotiated.
 */
export class ForwardingTarget {
  readonly exchange: OpenAIChatExchange;
  /** The same exchange over answers read as they arrive (streamed requests), when given `open`. */
  readonly streamExchange: OpenAIChatExchange | undefined;

  constructor(options: {
    exchange: (request: ForwardRequest) => Promise<BufferedAnswer>;
    /** Send a request and answer once its headers came, the body left to read as it arrives. */
    open?: (request: ForwardRequest) => Promise<ChatAnswer>;
    url: string;
    mode?: ProxyToolMode;
    logger?: (line: string) => void;
  }) {
    const negotiation = new ToolModeNegotiation(
      options.mode ?? "auto",
      options.logger ?? ((line) => console.info(line)),
      "forge proxy",
    );
    this.exchange = new OpenAIChatExchange({
      transport: bufferedTransport(options.url, options.exchange),
      negotiation,
    });
    const { open } = options;
    this.streamExchange =
      open && new OpenAIChatExchange({ transport: openTransport(options.url, open), negotiation });
  }

  /** The decided tool mode; `undefined` while `auto` is undecided. */
  get resolvedMode(): "native" | "prompt" | undefined {
    return this.exchange.negotiation.resolved;
  }
}

/**
 * One request's client: its model and forwarded fields over the shared target. It never retries:
 * the proxy answers a transient backend error (429, 502–504) with its status and `Retry-After`,
 * and the caller's own client (the openai and Anthropic SDKs retry those) decides.
 */
export class ForwardingChatClient implements LLMClient {
  readonly apiFormat = "openai" as const;
  readonly #target: ForwardingTarget;
  readonly #model: string | undefined;
  readonly #extraBody: Record<string, unknown>;

  constructor(target: ForwardingTarget, model: string | undefined, extraBody: Record<string, unknown>) {
    this.#target = target;
    this.#model = model;
    this.#extraBody = extraBody;
  }

  send(
    messages: Record<string, unknown>[],
    tools: ToolSpec[] = [],
    options: SendOptions = {},
  ): Promise<LLMResponse> {
    return this.#target.exchange.complete(this.#request(messages, tools, options), options.signal);
  }

  /**
   * The answer as the backend streams it (`stream: true` upstream): deltas as they come, then
   * FINAL. A target without `open` answers in one FINAL chunk.
   */
  async *sendStream(
    messages: Record<string, unknown>[],
    tools: ToolSpec[] = [],
    options: SendOptions = {},
  ): AsyncIterable<StreamChunk> {
    const streamed = this.#target.streamExchange;
    if (streamed === undefined) {
      yield { type: ChunkType.FINAL, response: await this.send(messages, tools, options) };
      return;
    }
    yield* streamed.stream(this.#request(messages, tools, options), options.signal);
  }

  async getContextLength(): Promise<number | null> {
    return null;
  }

  /**
   * The model's likeliest first tokens for this prompt, sent as `send` would send it (see
   * `OpenAIChatExchange.firstTokenChoices`); `null` when the backend reports no logprobs.
   */
  firstTokens(
    messages: Record<string, unknown>[],
    tools: ToolSpec[],
    options: { top: number; signal?: AbortSignal | undefined },
  ): Promise<TokenChoice[] | null> {
    return this.#target.exchange.firstTokenChoices(
      this.#request(messages, tools, {}),
      options.top,
      options.signal,
    );
  }

  /**
   * The client's own body with the history and tools replaced (and `options.sampling` over its
   * sampling fields, `maxTokens` over `max_completion_tokens` too, `options.toolChoice` over its
   * `tool_choice`); `stream` is the exchange's.
   */
  #request(messages: Record<string, unknown>[], tools: ToolSpec[], options: SendOptions): ChatRequest {
    const sampled = options.sampling
      ? { ...this.#extraBody, ...openAISamplingFields(options.sampling) }
      : this.#extraBody;
    // The loop's forced retry (SendOptions.toolChoice) wins over the caller's own tool_choice.
    const fields =
      options.toolChoice === undefined
        ? sampled
        : { ...sampled, tool_choice: openAIToolChoice(options.toolChoice) };
    // A clamped reply length replaces the client's, in whichever name it sent it.
    const maxTokens = options.sampling?.maxTokens;
    if (maxTokens !== undefined && this.#extraBody.max_completion_tokens !== undefined) {
      fields.max_completion_tokens = maxTokens;
    }
    return { messages, tools, model: this.#model, fields, onUsage: options.onUsage };
  }
}

/** The proxy's pooled transport as a `ChatTransport`: each answer read in full before it is looked at. */
function bufferedTransport(
  url: string,
  exchange: (request: ForwardRequest) => Promise<BufferedAnswer>,
): ChatTransport {
  return {
    url,
    post: async (body, signal) =>
      new BufferedChatAnswer(
        await exchange({
          method: "POST",
          path: CHAT_PATH,
          body: JSON.stringify(body),
          ...(signal && { signal }),
        }),
      ),
  };
}

/** The proxy's transport as a `ChatTransport` whose answers are read as they arrive. */
function openTransport(url: string, open: (request: ForwardRequest) => Promise<ChatAnswer>): ChatTransport {
  return {
    url,
    post: (body, signal) =>
      open({ method: "POST", path: CHAT_PATH, body: JSON.stringify(body), ...(signal && { signal }) }),
  };
}

/** A whole answer as a `ChatAnswer`: `read` gives the body once, then `null`. */
class BufferedChatAnswer implements ChatAnswer {
  readonly status: number;
  readonly retryAfter: string | undefined;
  readonly #body: Buffer;
  #unread = true;

  constructor(answer: BufferedAnswer) {
    this.status = answer.status;
    this.retryAfter = answer.retryAfter;
    this.#body = answer.body;
  }

  text(): Promise<string> {
    return Promise.resolve(this.#body.toString("utf8"));
  }

  read(): Promise<string | null> {
    if (!this.#unread) return Promise.resolve(null);
    this.#unread = false;
    return this.text();
  }

  release(): void {
    // Read in full already: nothing is left to drain.
  }

  close(): void {
    // Read in full already: there is no connection to cut.
  }
}

/** `http://host:8080` and `http://host:8080/v1` both name the same OpenAI-compatible server. */
export function withV1(baseUrl: string): string {
  const trimmed = baseUrl.replace(/\/+$/, "");
  return trimmed.endsWith("/v1") ? trimmed : `${trimmed}/v1`;
}

/** The server root, without a trailing `/v1`. */
export function withoutV1(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "");
}
