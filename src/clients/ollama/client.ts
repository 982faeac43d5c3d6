/**
 * OllamaClient: native function calling through Ollama's `/api/chat`, with NDJSON streaming,
 * thinking control and a per-request context size.
 */
import { BackendError, parseRetryAfter, StreamError, ThinkingNotSupportedError } from "../../core/errors.ts";
import { type ToolSpec, toOpenAITool } from "../../core/tools.ts";
import {
  ChunkType,
  type LLMClient,
  type LLMResponse,
  type SamplingOverrides,
  type SendOptions,
  type StreamChunk,
} from "../../core/types.ts";
import { withSamplingOverrides } from "../call-sampling.ts";
import { authHeaders, type Exchange, joinUrl, openExchange } from "../http.ts";
import { type AssembledMessage, readMessage } from "../openai/wire.ts";
import { describeRetry, type PlannedRetry, type RetryOptions } from "../retry.ts";
import { RetryingClient } from "../retrying-client.ts";
import { resolveSampling, type SamplingParams } from "../sampling.ts";
import { checkStreamEvent, isPlainObject, parseStreamJson, parseWireBody } from "../wire.ts";
import {
  isKnownThinkingModel,
  isOllamaChat,
  isThinkingUnsupported,
  ndjsonLines,
  type OllamaChat,
  ollamaChatSchema,
  ollamaErrorSchema,
  ollamaGenerateSchema,
  ollamaUsage,
} from "./wire.ts";

/** Options of `OllamaClient`; the sampling fields go out under `options` in Ollama's names (`top_k`, `repeat_penalty`, `num_predict`, …). */
export interface OllamaClientOptions extends RetryOptions, SamplingOverrides {
  /** Ollama's model name, e.g. `qwen3:8b`. Also the key of the sampling map. */
  model: string;
  /** Default `http://127.0.0.1:11434`. */
  baseUrl?: string;
  /** Sent as `Authorization: Bearer <key>` (an Ollama behind an authenticating proxy, or Ollama's cloud). */
  apiKey?: string;
  /**
   * `undefined` (auto): send `think: true` only for models known to think, and drop it for good if
   * Ollama answers that the model does not support thinking. `true`: always send it
   * (`ThinkingNotSupportedError` if unsupported). `false`: send `think: false` and discard reasoning.
   */
  think?: boolean;
  /** Longest silence from the server (before the headers, or between body chunks). Default 300 000. */
  timeoutMs?: number;
  /** Sent as `options.num_ctx`; see `setNumCtx`. */
  numCtx?: number;
  /** Sent as `keep_alive` (how long Ollama keeps the model loaded). */
  keepAlive?: string | number;
  /** Apply the model card's sampling (see `getSamplingDefaults`); explicit values still win. */
  recommendedSampling?: boolean;
  /** Where informational lines go. Default `console.info`. */
  logger?: (line: string) => void;
}

/**
 * An `LLMClient` for Ollama (`apiFormat: "ollama"`: tool-call arguments are objects and tool
 * results carry `tool_name`, which Ollama accepts as they are).
 *
 * Errors are those of `OpenAICompatibleClient`: `BackendError(status, body)` for HTTP errors and
 * error lines in a stream, 408 on silence past `timeoutMs`, 503 when Ollama cannot be reached, 502
 * for an answer that is not the wire shape, `StreamError` for a truncated or malformed stream; an
 * aborted `signal` rethrows its reason. Retries as `OpenAICompatibleClient` (see `RetryOptions`).
 *
 * `SendOptions.toolChoice` is ignored: Ollama's native `/api/chat` has no `tool_choice` field
 * (ollama/ollama#11171 is open; a field sent anyway is not enforced), and faking one by dropping
 * tools or rewriting the prompt would change what the model sees.
 * @example
 * const client = new OllamaClient({ model: "qwen3:8b", recommendedSampling: true });
 * client.setNumCtx(16_384);
 */
export class OllamaClient extends RetryingClient implements LLMClient {
  readonly apiFormat = "ollama" as const;
  readonly baseUrl: string;
  readonly model: string;
  /** The sampling sent with every request, after `recommendedSampling` was applied. */
  readonly sampling: Readonly<SamplingParams>;
  readonly #options: OllamaClientOptions;
  readonly #timeoutMs: number;
  readonly #logger: (line: string) => void;
  readonly #chatUrl: string;
  readonly #headers: Record<string, string> | undefined;
  #numCtx: number | undefined;
  #autoThink: boolean;

  constructor(options: OllamaClientOptions) {
    super(options);
    this.#options = options;
    this.baseUrl = (options.baseUrl ?? "http://127.0.0.1:11434").replace(/\/+$/, "");
    this.model = options.model;
    this.#timeoutMs = options.timeoutMs ?? 300_000;
    this.#logger = options.logger ?? ((line) => console.info(line));
    this.#chatUrl = joinUrl(this.baseUrl, "api/chat");
    this.#headers = authHeaders(options.apiKey);
    this.#numCtx = options.numCtx;
    this.#autoThink = isKnownThinkingModel(options.model);
    this.sampling = resolveSampling({
      model: options.model,
      recommendedSampling: options.recommendedSampling ?? false,
      explicit: options,
      logger: this.#logger,
    });
  }

  /** Set the context size sent on every request as `options.num_ctx` (`null`: Ollama's default). */
  setNumCtx(numCtx: number | null): void {
    this.#numCtx = numCtx ?? undefined;
  }

  /** The `num_ctx` set on this client, or `null`; budget discovery for Ollama lives elsewhere. */
  async getContextLength(): Promise<number | null> {
    return this.#numCtx ?? null;
  }

  protected override logRetry(retry: PlannedRetry): void {
    this.#logger(describeRetry(retry, this.#chatUrl));
  }

  protected override async sendOnce(
    messages: Record<string, unknown>[],
    tools: ToolSpec[],
    options: SendOptions,
  ): Promise<LLMResponse> {
    const exchange = await this.#open(messages, tools, false, options);
    const chat = parseWireBody(ollamaChatSchema, await exchange.text(), this.#chatUrl, isOllamaChat);
    const usage = ollamaUsage(chat);
    if (usage) options.onUsage?.(usage);
    return this.#read(messageOf([chat]), tools);
  }

  protected override async *streamOnce(
    messages: Record<string, unknown>[],
    tools: ToolSpec[],
    options: SendOptions,
  ): AsyncGenerator<StreamChunk> {
    const exchange = await this.#open(messages, tools, true, options);
    const lines: OllamaChat[] = [];
    let done = false;
    try {
      for await (const line of ndjsonLines(exchange)) {
        const chat = this.#parseLine(line);
        lines.push(chat);
        const content = chat.message?.content;
        if (content) yield { type: ChunkType.TEXT_DELTA, content };
        for (const call of chat.message?.tool_calls ?? []) {
          // The fields the schema keeps, in its order, whatever else the line carried.
          const { name, arguments: args } = call.function;
          yield { type: ChunkType.TOOL_CALL_DELTA, content: JSON.stringify({ name, arguments: args }) };
        }
        if (chat.done) {
          done = true;
          break;
        }
      }
    } finally {
      // After the done line the connection is handed back for reuse; an unfinished stream is cut.
      if (done) exchange.release();
      else exchange.close();
    }
    if (!done) {
      throw new StreamError(
        `Stream from ${this.#chatUrl} ended without its "done": true line after ${lines.length} lines: it was truncated`,
      );
    }
    const usage = ollamaUsage(lines.at(-1));
    if (usage) options.onUsage?.(usage);
    yield { type: ChunkType.FINAL, response: this.#read(messageOf(lines), tools) };
  }

  /** Unload the model from Ollama's memory now (`/api/generate` with `keep_alive: 0`). */
  async unload(options: SendOptions = {}): Promise<void> {
    const url = joinUrl(this.baseUrl, "api/generate");
    const exchange = await openExchange({
      method: "POST",
      url,
      json: { model: this.model, keep_alive: 0 },
      headers: this.#headers,
      timeoutMs: this.#timeoutMs,
      signal: options.signal,
    });
    const body = await exchange.text();
    if (!exchange.ok) throw new BackendError(exchange.status, body);
    parseWireBody(ollamaGenerateSchema, body, url);
  }

  async #open(
    messages: Record<string, unknown>[],
    tools: ToolSpec[],
    stream: boolean,
    options: SendOptions,
  ): Promise<Exchange> {
    const think = this.#options.think ?? (this.#autoThink ? true : undefined);
    const exchange = await openExchange({
      method: "POST",
      url: this.#chatUrl,
      json: this.#requestBody(messages, tools, stream, think, options),
      headers: this.#headers,
      timeoutMs: this.#timeoutMs,
      signal: options.signal,
    });
    if (exchange.ok) return exchange;
    const body = await exchange.text();
    if (think === true && isThinkingUnsupported(exchange.status, body)) {
      if (this.#options.think === true)
        throw new ThinkingNotSupportedError(this.model, exchange.status, body);
      this.#autoThink = false;
      this.#logger(
        `forge-guardrails: Ollama says '${this.model}' does not support thinking; sending requests without think from now on.`,
      );
      return this.#open(messages, tools, stream, options);
    }
    throw new BackendError(exchange.status, body, undefined, {
      retryAfterSeconds: parseRetryAfter(exchange.response.headers.get("retry-after")),
    });
  }

  #requestBody(
    messages: Record<string, unknown>[],
    tools: ToolSpec[],
    stream: boolean,
    think: boolean | undefined,
    options: SendOptions,
  ): Record<string, unknown> {
    const sampling = withSamplingOverrides(
      { ...this.sampling, maxTokens: this.#options.maxTokens, seed: this.#options.seed },
      options.sampling,
    );
    const settings = {
      ...(sampling.temperature !== undefined && { temperature: sampling.temperature }),
      ...(sampling.topP !== undefined && { top_p: sampling.topP }),
      ...(sampling.topK !== undefined && { top_k: sampling.topK }),
      ...(sampling.minP !== undefined && { min_p: sampling.minP }),
      ...(sampling.repeatPenalty !== undefined && { repeat_penalty: sampling.repeatPenalty }),
      ...(sampling.presencePenalty !== undefined && { presence_penalty: sampling.presencePenalty }),
      ...(sampling.maxTokens !== undefined && { num_predict: sampling.maxTokens }),
      ...(sampling.seed !== undefined && { seed: sampling.seed }),
      ...(this.#numCtx !== undefined && { num_ctx: this.#numCtx }),
    };
    return {
      model: this.model,
      messages,
      stream,
      ...(tools.length > 0 && { tools: tools.map(toOpenAITool) }),
      ...(think !== undefined && { think }),
      ...(this.#options.keepAlive !== undefined && { keep_alive: this.#options.keepAlive }),
      ...(Object.keys(settings).length > 0 && { options: settings }),
    };
  }

  #parseLine(line: string): OllamaChat {
    const value = parseStreamJson(line, this.#chatUrl);
    if (isPlainObject(value) && "error" in value) {
      const { error } = checkStreamEvent(ollamaErrorSchema, value, this.#chatUrl);
      throw new BackendError(500, line, `Error in the stream from ${this.#chatUrl}: ${error}`);
    }
    return isOllamaChat(value) ? value : checkStreamEvent(ollamaChatSchema, value, this.#chatUrl);
  }

  #read(message: AssembledMessage, tools: ToolSpec[]): LLMResponse {
    return readMessage(message, {
      mode: "native",
      toolNames: tools.map((tool) => tool.name),
      think: this.#options.think,
    });
  }
}

/** One message from the lines of an answer (a single line when it was not streamed). */
function messageOf(lines: readonly OllamaChat[]): AssembledMessage {
  let content = "";
  let thinking = "";
  const toolCalls: AssembledMessage["toolCalls"] = [];
  for (const line of lines) {
    content += line.message?.content ?? "";
    thinking += line.message?.thinking ?? "";
    for (const call of line.message?.tool_calls ?? []) {
      toolCalls.push({ name: call.function.name, arguments: call.function.arguments });
    }
  }
  return { content, reasoningContent: thinking.length > 0 ? thinking : null, toolCalls };
}
