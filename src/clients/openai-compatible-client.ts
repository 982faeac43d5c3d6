/**
 * OpenAICompatibleClient: llama-server, llamafile and vLLM through `/v1/chat/completions`, with
 * native function calling, prompt-injected tool calling, or an automatic choice between them.
 */
import { basename } from "node:path";
import { BackendError } from "../core/errors.ts";
import { type ToolSpec, toOpenAITool } from "../core/tools.ts";
import {
  ChunkType,
  type LLMClient,
  type LLMResponse,
  type SendOptions,
  type StreamChunk,
} from "../core/types.ts";
import { authHeaders, type Exchange, joinUrl, openExchange } from "./http.ts";
import {
  errorMessageOf,
  rejectsNativeTools,
  responseFromParseFailure,
  toolParseFailureOutput,
} from "./llama-server-errors.ts";
import { parseServerProps } from "./llama-server-props.ts";
import { streamChatCompletion } from "./openai-stream.ts";
import {
  chatCompletionSchema,
  isChatCompletion,
  messageOfCompletion,
  type ReadContext,
  readMessage,
} from "./openai-wire.ts";
import { toPromptModeMessages } from "./prompt-mode.ts";
import { resolveSampling, type SamplingParams } from "./sampling.ts";
import { parseWireBody } from "./wire.ts";

/** How tools reach the model: the server's function calling, the system prompt, or try native first. */
export type ToolCallingMode = "native" | "prompt" | "auto";

/** Options of `OpenAICompatibleClient`. */
export interface OpenAICompatibleClientOptions {
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
  temperature?: number;
  topP?: number;
  topK?: number;
  minP?: number;
  maxTokens?: number;
  seed?: number;
  /** Sent as `tool_choice` in native mode. */
  toolChoice?: "auto" | "required" | "none";
  /** Apply the model card's sampling (see `getSamplingDefaults`); explicit values still win. */
  recommendedSampling?: boolean;
  /** Where informational lines go (sampling hint, auto-mode fallback). Default `console.info`. */
  logger?: (line: string) => void;
}

/** The request was answered: the open response, or the error status and body. */
type Opened =
  | { kind: "open"; exchange: Exchange; mode: "native" | "prompt" }
  | { kind: "failed"; status: number; body: string; mode: "native" | "prompt" };

/**
 * An `LLMClient` for OpenAI-compatible servers (llama-server, llamafile, vLLM).
 *
 * Errors: HTTP errors are `BackendError(status, body)`; silence past `timeoutMs` is
 * `BackendError(408)`; an unreachable server is `BackendError(503)` whose body is the transport's
 * message; a 2xx answer that is not the documented shape is `BackendError(502)`; a truncated or
 * malformed stream is `StreamError`. An aborted `signal` rethrows its reason. llama-server's
 * HTTP 500 "Failed to parse input" (its tool-call parser rejected the output) is not an error:
 * the calls are rescued from the output it embeds, or the output is returned as text.
 * @example
 * const client = new OpenAICompatibleClient({ ggufPath: "models/Qwen3-8B-Q4_K_M.gguf", recommendedSampling: true });
 * const runner = new WorkflowRunner({ client, contextManager });
 */
export class OpenAICompatibleClient implements LLMClient {
  readonly apiFormat = "openai" as const;
  readonly baseUrl: string;
  readonly model: string | undefined;
  readonly mode: ToolCallingMode;
  /** The sampling sent with every request, after `recommendedSampling` was applied. */
  readonly sampling: Readonly<SamplingParams>;
  readonly #options: OpenAICompatibleClientOptions;
  readonly #timeoutMs: number;
  readonly #logger: (line: string) => void;
  readonly #chatUrl: string;
  readonly #headers: Record<string, string> | undefined;
  #resolvedMode: "native" | "prompt" | undefined;

  constructor(options: OpenAICompatibleClientOptions = {}) {
    this.#options = options;
    this.baseUrl = (options.baseUrl ?? "http://127.0.0.1:8080/v1").replace(/\/+$/, "");
    this.model =
      options.model ?? (options.ggufPath ? basename(options.ggufPath).replace(/\.gguf$/i, "") : undefined);
    this.mode = options.mode ?? "auto";
    this.#timeoutMs = options.timeoutMs ?? 300_000;
    this.#logger = options.logger ?? ((line) => console.info(line));
    this.#chatUrl = joinUrl(this.baseUrl, "chat/completions");
    this.#headers = authHeaders(options.apiKey);
    this.#resolvedMode = this.mode === "auto" ? undefined : this.mode;
    this.sampling = resolveSampling({
      model: this.model,
      recommendedSampling: options.recommendedSampling ?? false,
      explicit: options,
      logger: this.#logger,
    });
  }

  /**
   * The tool-calling mode in use: `mode` itself, or for `"auto"` what the first request with tools
   * decided (`undefined` until then).
   */
  get resolvedMode(): "native" | "prompt" | undefined {
    return this.#resolvedMode;
  }

  async send(
    messages: Record<string, unknown>[],
    tools: ToolSpec[] = [],
    options: SendOptions = {},
  ): Promise<LLMResponse> {
    const opened = await this.#open(messages, tools, false, options.signal);
    if (opened.kind === "failed") return this.#responseToFailure(opened, tools);
    const body = await opened.exchange.text();
    const completion = parseWireBody(chatCompletionSchema, body, this.#chatUrl, isChatCompletion);
    return readMessage(messageOfCompletion(completion), this.#readContext(opened.mode, tools));
  }

  sendStream(
    messages: Record<string, unknown>[],
    tools: ToolSpec[] = [],
    options: SendOptions = {},
  ): AsyncIterable<StreamChunk> {
    return streamChatCompletion(async () => {
      const opened = await this.#open(messages, tools, true, options.signal);
      if (opened.kind === "failed") {
        return { type: ChunkType.FINAL, response: this.#responseToFailure(opened, tools) };
      }
      return { exchange: opened.exchange, context: this.#readContext(opened.mode, tools) };
    }, this.#chatUrl);
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

  async #open(
    messages: Record<string, unknown>[],
    tools: ToolSpec[],
    stream: boolean,
    signal: AbortSignal | undefined,
  ): Promise<Opened> {
    const mode = this.#resolvedMode ?? "native";
    const exchange = await openExchange({
      method: "POST",
      url: this.#chatUrl,
      json: this.#requestBody(messages, tools, mode, stream),
      headers: this.#headers,
      timeoutMs: this.#timeoutMs,
      signal,
    });
    if (exchange.ok) {
      if (tools.length > 0) this.#resolvedMode ??= mode;
      return { kind: "open", exchange, mode };
    }
    const body = await exchange.text();
    const deciding = this.#resolvedMode === undefined && tools.length > 0;
    if (deciding && rejectsNativeTools(exchange.status, body)) {
      this.#resolvedMode = "prompt";
      this.#logger(
        `forge-guardrails: ${this.baseUrl} rejected native tool calling (HTTP ${exchange.status}: ${errorMessageOf(body).slice(0, 200)}); using prompt-injected tool calling from now on.`,
      );
      return this.#open(messages, tools, stream, signal);
    }
    // A tool-call parse failure proves the server took the tools.
    if (deciding && toolParseFailureOutput(exchange.status, body) !== null) this.#resolvedMode = mode;
    return { kind: "failed", status: exchange.status, body, mode };
  }

  #responseToFailure(failed: Extract<Opened, { kind: "failed" }>, tools: ToolSpec[]): LLMResponse {
    const output = toolParseFailureOutput(failed.status, failed.body);
    if (output === null) throw new BackendError(failed.status, failed.body);
    return responseFromParseFailure(
      output,
      tools.map((tool) => tool.name),
      this.#options.think,
    );
  }

  #requestBody(
    messages: Record<string, unknown>[],
    tools: ToolSpec[],
    mode: "native" | "prompt",
    stream: boolean,
  ): Record<string, unknown> {
    const options = this.#options;
    const native = mode === "native" && tools.length > 0;
    return {
      ...(this.model !== undefined && { model: this.model }),
      messages: mode === "prompt" ? toPromptModeMessages(messages, tools) : messages,
      ...(native && { tools: tools.map(toOpenAITool) }),
      ...(native && options.toolChoice !== undefined && { tool_choice: options.toolChoice }),
      stream,
      ...(this.sampling.temperature !== undefined && { temperature: this.sampling.temperature }),
      ...(this.sampling.topP !== undefined && { top_p: this.sampling.topP }),
      ...(this.sampling.topK !== undefined && { top_k: this.sampling.topK }),
      ...(this.sampling.minP !== undefined && { min_p: this.sampling.minP }),
      ...(options.maxTokens !== undefined && { max_tokens: options.maxTokens }),
      ...(options.seed !== undefined && { seed: options.seed }),
      ...(options.slotId !== undefined && { id_slot: options.slotId }),
      cache_prompt: options.cachePrompt ?? true,
    };
  }

  #readContext(mode: "native" | "prompt", tools: ToolSpec[]): ReadContext {
    return { mode, toolNames: tools.map((tool) => tool.name), think: this.#options.think };
  }
}
