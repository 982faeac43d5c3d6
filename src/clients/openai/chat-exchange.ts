/**
 * One OpenAI chat exchange, shared by `OpenAICompatibleClient` and the proxy's forwarding path:
 * the request body, the native/prompt/auto tool-calling negotiation, the rescue of llama-server's
 * tool-call parse failures, and the mapping of error answers to `BackendError`. How the bytes
 * travel is the transport's business (`ChatTransport`): fetch for the client, the proxy's pooled
 * node:http transport for the proxy.
 */
import { BackendError, parseRetryAfter } from "../../core/errors.ts";
import { type ToolSpec, toOpenAITool } from "../../core/tools.ts";
import { ChunkType, type LLMResponse, type StreamChunk, type TokenUsage } from "../../core/types.ts";
import {
  errorMessageOf,
  rejectsNativeTools,
  responseFromParseFailure,
  toolParseFailureOutput,
} from "../llama-server/errors.ts";
import { toPromptModeMessages } from "../prompt-mode.ts";
import { parseWireBody } from "../wire.ts";
import { streamChatCompletion } from "./stream.ts";
import { reportUsage } from "./usage.ts";
import {
  chatCompletionSchema,
  firstTokenSchema,
  isChatCompletion,
  messageOfCompletion,
  type ReadContext,
  readMessage,
} from "./wire.ts";

/** One alternative for a token of an answer: its text and the model's probability of it. */
export interface TokenChoice {
  token: string;
  probability: number;
}

/** How tools reach the model: the server's function calling, the system prompt, or try native first. */
export type ToolCallingMode = "native" | "prompt" | "auto";

/** A backend's answer, its body read on demand. `Exchange` (src/clients/http.ts) is one. */
export interface ChatAnswer {
  readonly status: number;
  /** The `Retry-After` header, as sent. */
  readonly retryAfter: string | null | undefined;
  /** The whole body as text. */
  text(): Promise<string>;
  /** The next piece of the body as it arrives; `null` at its end. */
  read(): Promise<string | null>;
  /** Done with the answer: the rest of the body may be drained, the connection reused. */
  release(): void;
  /** Drop the answer, cutting an unfinished body. */
  close(): void;
}

/**
 * How a chat request travels. Transport failures (unreachable, timeout, a connection cut) are
 * the transport's to report; an HTTP error status is an answer, not a failure.
 */
export interface ChatTransport {
  /** Where requests go, for messages. */
  readonly url: string;
  post(body: Record<string, unknown>, signal: AbortSignal | undefined): Promise<ChatAnswer>;
}

/** One chat request: the history, the tools, and the other fields of the body. */
export interface ChatRequest {
  messages: Record<string, unknown>[];
  tools: readonly ToolSpec[];
  /** Sent as `model` when given. */
  model?: string | undefined;
  /**
   * Every other field of the body (sampling, `tool_choice`, `parallel_tool_calls`, llama-server's
   * `cache_prompt`, …). `tool_choice` and `parallel_tool_calls` are dropped when tools do not go
   * natively.
   */
  fields: Readonly<Record<string, unknown>>;
  /** Receives the token usage the answer reports (`SendOptions.onUsage`). */
  onUsage?: ((usage: TokenUsage) => void) | undefined;
}

/**
 * The request body for `mode`: `fields`, then `model`, the history (rewritten for prompt mode),
 * the tools in native mode, and `stream`.
 */
export function chatRequestBody(
  request: ChatRequest,
  mode: "native" | "prompt",
  stream: boolean,
): Record<string, unknown> {
  const { messages, tools } = request;
  const native = mode === "native" && tools.length > 0;
  const body: Record<string, unknown> = { ...request.fields };
  if (request.model !== undefined) body.model = request.model;
  body.messages = mode === "prompt" ? toPromptModeMessages(messages, tools) : messages;
  if (native) body.tools = tools.map(toOpenAITool);
  else {
    delete body.tool_choice;
    delete body.parallel_tool_calls;
  }
  body.stream = stream;
  return body;
}

/**
 * The tool-calling mode of one backend: fixed, or for `"auto"` native until the server rejects
 * native tools (then prompt, for good) or accepts them (then native, for good).
 */
export class ToolModeNegotiation {
  readonly mode: ToolCallingMode;
  readonly #logPrefix: string;
  readonly #logger: (line: string) => void;
  #resolved: "native" | "prompt" | undefined;

  constructor(mode: ToolCallingMode, logger: (line: string) => void, logPrefix = "forge-guardrails") {
    this.mode = mode;
    this.#logger = logger;
    this.#logPrefix = logPrefix;
    this.#resolved = mode === "auto" ? undefined : mode;
  }

  /** The decided mode; `undefined` while `auto` has not seen a request with tools answered. */
  get resolved(): "native" | "prompt" | undefined {
    return this.#resolved;
  }

  /** The mode to try now: the decided one, or native while undecided. */
  get current(): "native" | "prompt" {
    return this.#resolved ?? "native";
  }

  /** The server took the tools in `mode`. */
  settle(mode: "native" | "prompt"): void {
    this.#resolved ??= mode;
  }

  /** The server rejected native tools: prompt mode from now on, said once in the log. */
  fallBack(url: string, status: number, body: string): void {
    this.#resolved = "prompt";
    this.#logger(
      `${this.#logPrefix}: ${url} rejected native tool calling (HTTP ${status}: ${errorMessageOf(body).slice(0, 200)}); using prompt-injected tool calling from now on.`,
    );
  }
}

/** The request was answered: the open answer, or the error status and body. */
type Opened =
  | { kind: "open"; answer: ChatAnswer; mode: "native" | "prompt" }
  | { kind: "failed"; status: number; body: string; retryAfter: string | null | undefined };

/**
 * OpenAI chat completions over a `ChatTransport`.
 *
 * Errors: an HTTP error answer is `BackendError(status, body)` with the server's `Retry-After`,
 * except llama-server's tool-call parse failure (HTTP 500, or an error event in a stream), which
 * is rescued: the calls in the output it embeds, or the output as text. A 2xx answer that is not
 * the documented shape is `BackendError(502)`; a truncated or malformed stream is `StreamError`.
 */
export class OpenAIChatExchange {
  readonly transport: ChatTransport;
  readonly negotiation: ToolModeNegotiation;
  readonly #think: boolean | undefined;

  constructor(options: { transport: ChatTransport; negotiation: ToolModeNegotiation; think?: boolean }) {
    this.transport = options.transport;
    this.negotiation = options.negotiation;
    this.#think = options.think;
  }

  /** A non-streamed completion, read as an `LLMResponse`. */
  async complete(request: ChatRequest, signal: AbortSignal | undefined): Promise<LLMResponse> {
    const opened = await this.#open(request, false, signal);
    if (opened.kind === "failed") return this.#responseToFailure(opened, request.tools);
    const body = await opened.answer.text();
    const completion = parseWireBody(chatCompletionSchema, body, this.transport.url, isChatCompletion);
    reportUsage(completion, request.onUsage);
    return readMessage(messageOfCompletion(completion), this.#readContext(opened.mode, request));
  }

  /**
   * The model's `top` likeliest first tokens for `request` (the same body `complete` sends, with a
   * one-token reply and `logprobs`), likeliest first; `null` when the server reports no logprobs.
   * On a server that caches prompts (llama-server) this costs one token's evaluation after an
   * answer to the same prompt. An error answer is `BackendError`.
   */
  async firstTokenChoices(
    request: ChatRequest,
    top: number,
    signal: AbortSignal | undefined,
  ): Promise<TokenChoice[] | null> {
    const body = chatRequestBody(request, this.negotiation.current, false);
    delete body.max_completion_tokens;
    delete body.n;
    delete body.stream_options;
    Object.assign(body, { max_tokens: 1, logprobs: true, top_logprobs: top });
    const answer = await this.transport.post(body, signal);
    const text = await answer.text();
    if (answer.status < 200 || answer.status >= 300) {
      throw new BackendError(answer.status, text, undefined, {
        retryAfterSeconds: parseRetryAfter(answer.retryAfter),
      });
    }
    const first = parseWireBody(firstTokenSchema, text, this.transport.url).choices[0]?.logprobs
      ?.content?.[0];
    if (!first) return null;
    const alternatives = first.top_logprobs?.length ? first.top_logprobs : [first];
    return alternatives
      .map(({ token, logprob }) => ({ token, probability: Math.exp(logprob) }))
      .sort((a, b) => b.probability - a.probability);
  }

  /** A streamed completion: deltas as they come, then FINAL (see `streamChatCompletion`). */
  stream(request: ChatRequest, signal: AbortSignal | undefined): AsyncGenerator<StreamChunk> {
    return streamChatCompletion(async () => {
      const opened = await this.#open(request, true, signal);
      if (opened.kind === "failed") {
        return { type: ChunkType.FINAL, response: this.#responseToFailure(opened, request.tools) };
      }
      return { exchange: opened.answer, context: this.#readContext(opened.mode, request) };
    }, this.transport.url);
  }

  async #open(request: ChatRequest, stream: boolean, signal: AbortSignal | undefined): Promise<Opened> {
    const negotiation = this.negotiation;
    const mode = negotiation.current;
    const hasTools = request.tools.length > 0;
    const answer = await this.transport.post(chatRequestBody(request, mode, stream), signal);
    if (answer.status >= 200 && answer.status < 300) {
      if (hasTools) negotiation.settle(mode);
      return { kind: "open", answer, mode };
    }
    const body = await answer.text();
    const deciding = negotiation.resolved === undefined && hasTools;
    if (deciding && rejectsNativeTools(answer.status, body)) {
      negotiation.fallBack(this.transport.url, answer.status, body);
      return this.#open(request, stream, signal);
    }
    // A tool-call parse failure proves the server took the tools.
    if (deciding && toolParseFailureOutput(answer.status, body) !== null) negotiation.settle(mode);
    return { kind: "failed", status: answer.status, body, retryAfter: answer.retryAfter };
  }

  #responseToFailure(failed: Extract<Opened, { kind: "failed" }>, tools: readonly ToolSpec[]): LLMResponse {
    const output = toolParseFailureOutput(failed.status, failed.body);
    if (output === null) {
      throw new BackendError(failed.status, failed.body, undefined, {
        retryAfterSeconds: parseRetryAfter(failed.retryAfter),
      });
    }
    return responseFromParseFailure(
      output,
      tools.map((tool) => tool.name),
      this.#think,
      tools,
    );
  }

  #readContext(mode: "native" | "prompt", request: ChatRequest): ReadContext {
    return {
      mode,
      toolNames: request.tools.map((tool) => tool.name),
      tools: request.tools,
      think: this.#think,
      onUsage: request.onUsage,
    };
  }
}
