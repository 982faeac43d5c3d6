/**
 * OpenAICompatibleClient: llama-server, llamafile and vLLM through `/v1/chat/completions`, with
 * native function calling, prompt-injected tool calling, or an automatic choice between them.
 */
import { basename } from "node:path";
import { BackendError } from "../../core/errors.ts";
import type { ToolSpec } from "../../core/tools.ts";
import type {
  LLMClient,
  LLMResponse,
  SamplingOverrides,
  SendOptions,
  StreamChunk,
  ToolChoice,
} from "../../core/types.ts";
import { openAISamplingFields, withSamplingOverrides } from "../call-sampling.ts";
import { authHeaders, joinUrl, openExchange } from "../http.ts";
import { parseServerProps } from "../llama-server/props.ts";
import { describeRetry, type PlannedRetry, type RetryOptions } from "../retry.ts";
import { RetryingClient } from "../retrying-client.ts";
import { resolveSampling, type SamplingParams } from "../sampling.ts";
import { openAIToolChoice } from "../tool-choice.ts";
import {
  type ChatRequest,
  type ChatTransport,
  OpenAIChatExchange,
  type ToolCallingMode,
  ToolModeNegotiation,
} from "./chat-exchange.ts";

export type { ToolCallingMode } from "./chat-exchange.ts";

/** Options of `OpenAICompatibleClient`; the sampling fields go out in llama-server's names (`top_p`, `min_p`, `repeat_penalty`, …). */
export interface OpenAICompatibleClientOptions extends RetryOptions, SamplingOverrides {
  /** Default `http://127.0.0.1:8080/v1` (llama-server's default port). */
  baseUrl?: string;
  /** Sent as `model`; defaults to the stem of `ggufPath`. Also the key of the sampling map. */
  model?: string;
  /** The GGUF file the server runs; its stem names the model when `model` is not given. */
  ggufPath?: string;
  /** Default `"auto"`: native, falling back to prompt once if the server rejects `tools`. */
  mode?: ToolCallingMode;
  /** `undefined` or `true`: capture reasoning into `ToolCall.reasoning`; `false`: discard it. */
  think?: boolean;
  /** Longest silence from the server (before the headers, or between body chunks). Default 300 000. */
  timeoutMs?: number;
  apiKey?: string;
  /** llama-server slot to run on (`id_slot`). */
  slotId?: number;
  /** llama-server prompt caching (`cache_prompt`). Default `true`. */
  cachePrompt?: boolean;
  /**
   * Sent as `tool_choice` in native mode (`{ name }` as `{type: "function", function: {name}}`);
   * a call's `SendOptions.toolChoice` wins over it. Prompt mode sends no tools, so none is sent.
   */
  toolChoice?: ToolChoice;
  /** Apply the model card's sampling (see `getSamplingDefaults`); explicit values still win. */
  recommendedSampling?: boolean;
  /** Where informational lines go (sampling hint, auto-mode fallback). Default `console.info`. */
  logger?: (line: string) => void;
}

/**
 * An `LLMClient` for OpenAI-compatible servers (llama-server, llamafile, vLLM).
 *
 * Errors: HTTP errors are `BackendError(status, body)`; silence past `timeoutMs` is
 * `BackendError(408)`; an unreachable server is `BackendError(503)` whose body is the transport's
 * message; a 2xx answer that is not the documented shape is `BackendError(502)`; a truncated or
 * malformed stream is `StreamError`. An aborted `signal` rethrows its reason. llama-server's
 * HTTP 500 "Failed to parse input" (its tool-call parser rejected the output) is not an error:
 * the calls are rescued from the output it embeds, or the output is returned as text.
 *
 * Retries (see `RetryOptions`): a transient error (unreachable, connection reset, 429, 502, 503,
 * 504) is retried `retries` times after a backoff that honours `Retry-After`, and a cut or
 * malformed stream `streamRetries` times, each retry announced by a RETRY chunk; past the bound,
 * the error above is thrown. Others (400, 401, 404, a context overflow, a timeout) never are.
 * @example
 * const client = new OpenAICompatibleClient({ ggufPath: "models/Qwen3-8B-Q4_K_M.gguf", recommendedSampling: true });
 * const runner = new WorkflowRunner({ client, contextManager });
 */
export class OpenAICompatibleClient extends RetryingClient implements LLMClient {
  readonly apiFormat = "openai" as const;
  readonly baseUrl: string;
  readonly model: string | undefined;
  readonly mode: ToolCallingMode;
  /** The sampling sent with every request, after `recommendedSampling` was applied. */
  readonly sampling: Readonly<SamplingParams>;
  readonly #options: OpenAICompatibleClientOptions;
  readonly #timeoutMs: number;
  readonly #headers: Record<string, string> | undefined;
  readonly #exchange: OpenAIChatExchange;
  /** The body fields of every request, besides the history, tools and `stream`. */
  readonly #fields: Readonly<Record<string, unknown>>;
  /** Says each retry in the log. */
  readonly #logRetry: (retry: PlannedRetry) => void;

  constructor(options: OpenAICompatibleClientOptions = {}) {
    super(options);
    this.#options = options;
    this.baseUrl = (options.baseUrl ?? "http://127.0.0.1:8080/v1").replace(/\/+$/, "");
    this.model =
      options.model ?? (options.ggufPath ? basename(options.ggufPath).replace(/\.gguf$/i, "") : undefined);
    this.mode = options.mode ?? "auto";
    this.#timeoutMs = options.timeoutMs ?? 300_000;
    const logger = options.logger ?? ((line) => console.info(line));
    this.#headers = authHeaders(options.apiKey);
    this.sampling = resolveSampling({
      model: this.model,
      recommendedSampling: options.recommendedSampling ?? false,
      explicit: options,
      logger,
    });
    this.#fields = this.#bodyFields(undefined);
    const chatUrl = joinUrl(this.baseUrl, "chat/completions");
    this.#logRetry = (retry) => logger(describeRetry(retry, chatUrl));
    this.#exchange = new OpenAIChatExchange({
      transport: fetchChatTransport(chatUrl, this.#headers, this.#timeoutMs),
      negotiation: new ToolModeNegotiation(this.mode, logger),
      ...(options.think !== undefined && { think: options.think }),
    });
  }

  /**
   * The tool-calling mode in use: `mode` itself, or for `"auto"` what the first request with tools
   * decided (`undefined` until then).
   */
  get resolvedMode(): "native" | "prompt" | undefined {
    return this.#exchange.negotiation.resolved;
  }

  protected override sendOnce(
    messages: Record<string, unknown>[],
    tools: ToolSpec[],
    options: SendOptions,
  ): Promise<LLMResponse> {
    return this.#exchange.complete(this.#request(messages, tools, options), options.signal);
  }

  protected override streamOnce(
    messages: Record<string, unknown>[],
    tools: ToolSpec[],
    options: SendOptions,
  ): AsyncIterable<StreamChunk> {
    return this.#exchange.stream(this.#request(messages, tools, options), options.signal);
  }

  protected override logRetry(retry: PlannedRetry): void {
    this.#logRetry(retry);
  }

  /**
   * The server's context length from llama-server's `GET /props` (`/v1` stripped from the base URL).
   * `null` when the server has no `/props` (HTTP 404: vLLM, other servers); `ContextDiscoveryError`
   * when it answers something without a positive `n_ctx`.
   */
  async getContextLength(): Promise<number | null> {
    const url = joinUrl(this.baseUrl.replace(/\/v1$/, ""), "props");
    const exchange = await openExchange({
      method: "GET",
      url,
      headers: this.#headers,
      timeoutMs: this.#timeoutMs,
    });
    const body = await exchange.text();
    if (exchange.status === 404) return null;
    if (!exchange.ok) throw new BackendError(exchange.status, body);
    return parseServerProps(body, url).nCtx;
  }

  #request(messages: Record<string, unknown>[], tools: ToolSpec[], options: SendOptions): ChatRequest {
    const base = options.sampling === undefined ? this.#fields : this.#bodyFields(options.sampling);
    const fields =
      options.toolChoice === undefined && options.parallelToolCalls === undefined
        ? base
        : {
            ...base,
            ...(options.toolChoice !== undefined && { tool_choice: openAIToolChoice(options.toolChoice) }),
            ...(options.parallelToolCalls !== undefined && {
              parallel_tool_calls: options.parallelToolCalls,
            }),
          };
    return { messages, tools, model: this.model, fields, onUsage: options.onUsage };
  }

  /** The body fields besides history, tools and `stream`: configured sampling, `overrides` over it. */
  #bodyFields(overrides: SamplingOverrides | undefined): Record<string, unknown> {
    const options = this.#options;
    const sampling = withSamplingOverrides(
      { ...this.sampling, maxTokens: options.maxTokens, seed: options.seed },
      overrides,
    );
    return {
      ...(options.toolChoice !== undefined && { tool_choice: openAIToolChoice(options.toolChoice) }),
      ...openAISamplingFields(sampling),
      ...(options.slotId !== undefined && { id_slot: options.slotId }),
      cache_prompt: options.cachePrompt ?? true,
    };
  }
}

/** The fetch transport of one chat URL: ky with the client's idle deadline (src/clients/http.ts). */
function fetchChatTransport(
  url: string,
  headers: Record<string, string> | undefined,
  timeoutMs: number,
): ChatTransport {
  return {
    url,
    post: (json, signal) => openExchange({ method: "POST", url, json, headers, timeoutMs, signal }),
  };
}
