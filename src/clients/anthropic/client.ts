/**
 * AnthropicClient: Claude through the official `@anthropic-ai/sdk`, as a frontier baseline. The
 * loop serializes OpenAI-shaped history; this client converts it before every call.
 */
import Anthropic, { APIConnectionError, APIConnectionTimeoutError, APIError } from "@anthropic-ai/sdk";
import { BackendError, parseRetryAfter, StreamError } from "../../core/errors.ts";
import { type ToolSpec, toolJsonSchema } from "../../core/tools.ts";
import {
  ChunkType,
  type LLMClient,
  type LLMResponse,
  type SamplingOverrides,
  type SendOptions,
  type StreamChunk,
} from "../../core/types.ts";
import { withSamplingOverrides } from "../call-sampling.ts";
import { describeErrorChain, IdleDeadline, TIMEOUT_STATUS, UNREACHABLE_STATUS } from "../http.ts";
import { readMessage } from "../openai/wire.ts";
import { describeRetry, type PlannedRetry, type RetryOptions } from "../retry.ts";
import { RetryingClient } from "../retrying-client.ts";
import { resolveSampling, type SamplingParams } from "../sampling.ts";
import { anthropicToolChoice } from "../tool-choice.ts";
import { checkWireValue } from "../wire.ts";
import { toAnthropicMessages } from "./messages.ts";
import {
  AnthropicStreamAssembler,
  type AnthropicUsage,
  anthropicMessageSchema,
  anthropicUsage,
  messageOfBlocks,
  tokenUsageOf,
} from "./wire.ts";

/** Options of `AnthropicClient`. */
export interface AnthropicClientOptions
  extends RetryOptions,
    Pick<SamplingOverrides, "temperature" | "topP" | "topK" | "maxTokens"> {
  /** e.g. `claude-sonnet-4-5`. */
  model: string;
  /**
   * Default (`undefined`): the SDK's (`ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN`, then its
   * credential profiles). `null`: send no credential at all, whatever the environment holds (for an
   * Anthropic-shaped server that is not Anthropic's, which must never receive the user's key).
   */
  apiKey?: string | null;
  /** Default: the SDK's (`https://api.anthropic.com`, or `ANTHROPIC_BASE_URL`). */
  baseURL?: string;
  /** Default 4096. */
  maxTokens?: number;
  /**
   * `"any"` forces a tool call; sent only with tools. A call's `SendOptions.toolChoice` wins over
   * it (`"required"` → `{type: "any"}`, `{ name }` → `{type: "tool", name}`).
   */
  toolChoice?: "auto" | "any";
  /** Longest silence from the API (before the answer, or between stream events). Default 300 000. */
  timeoutMs?: number;
  /** As on the other clients; the sampling map has no Claude entries, so opting in throws. */
  recommendedSampling?: boolean;
  /** Where informational lines go. Default `console.info`. */
  logger?: (line: string) => void;
}

/** Status Anthropic uses for each error type, for errors that arrive inside a stream (no HTTP status). */
const STATUS_OF_ERROR_TYPE: Readonly<Record<string, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  overloaded_error: 529,
};

/**
 * SDK options that send no credential: no key or token from the environment, and the headers a
 * credential profile would add are removed from each request before it leaves (the `fetch`
 * option), so nothing ambient can reach the server.
 */
const WITHOUT_CREDENTIALS = {
  apiKey: null,
  authToken: null,
  // A null header tells the SDK that no Authorization is wanted (it checks before each request).
  defaultHeaders: { authorization: null, "x-api-key": null },
  fetch: (input: string | URL | Request, init?: RequestInit) => {
    const headers = new Headers(init?.headers);
    headers.delete("authorization");
    headers.delete("x-api-key");
    return globalThis.fetch(input, { ...init, headers });
  },
};

/**
 * An `LLMClient` for Anthropic's Messages API (`apiFormat: "openai"`; see `toAnthropicMessages`
 * for the conversion). The SDK never retries (`maxRetries: 0`): the client's own bounded retries
 * (see `RetryOptions`, shared with the other clients) do, on 429, 5xx overload (529 included) and
 * lost connections.
 *
 * Errors: API errors are `BackendError(status, body)` with the API's JSON error as body (errors
 * inside a stream get the status of their type, e.g. 529 for `overloaded_error`); silence past
 * `timeoutMs` is `BackendError(408)`; an unreachable API is `BackendError(503)`; an answer that is
 * not the documented shape is `BackendError(502)`; a stream that ends before `message_stop` is
 * `StreamError`. An aborted `signal` rethrows its reason.
 * @example
 * const client = new AnthropicClient({ model: "claude-sonnet-4-5", toolChoice: "any" });
 */
export class AnthropicClient extends RetryingClient implements LLMClient {
  readonly apiFormat = "openai" as const;
  readonly model: string;
  /** The sampling sent with every request. */
  readonly sampling: Readonly<SamplingParams>;
  /** Token counts of the last completed call, or `null` before the first. */
  lastUsage: AnthropicUsage | null = null;
  readonly #options: AnthropicClientOptions;
  readonly #sdk: Anthropic;
  readonly #timeoutMs: number;
  /** Says each retry in the log. */
  readonly #logRetry: (retry: PlannedRetry) => void;

  constructor(options: AnthropicClientOptions) {
    super(options);
    this.#options = options;
    this.model = options.model;
    this.#timeoutMs = options.timeoutMs ?? 300_000;
    const logger = options.logger ?? ((line) => console.info(line));
    this.sampling = resolveSampling({
      model: options.model,
      recommendedSampling: options.recommendedSampling ?? false,
      explicit: options,
      logger,
    });
    this.#logRetry = (retry) => logger(describeRetry(retry, this.#source));
    this.#sdk = new Anthropic({
      ...(typeof options.apiKey === "string" && { apiKey: options.apiKey }),
      ...(options.apiKey === null && WITHOUT_CREDENTIALS),
      ...(options.baseURL !== undefined && { baseURL: options.baseURL }),
      maxRetries: 0,
      timeout: this.#timeoutMs,
    });
  }

  /** Claude models have a 200K-token context window. */
  async getContextLength(): Promise<number | null> {
    return 200_000;
  }

  protected override logRetry(retry: PlannedRetry): void {
    this.#logRetry(retry);
  }

  protected override async sendOnce(
    messages: Record<string, unknown>[],
    tools: ToolSpec[],
    options: SendOptions,
  ): Promise<LLMResponse> {
    const deadline = new IdleDeadline(this.#timeoutMs, this.#source);
    let value: unknown;
    try {
      value = await this.#sdk.messages.create(
        { ...this.#params(messages, tools, options), stream: false },
        { signal: combine(options.signal, deadline.signal) },
      );
    } catch (error) {
      throw mapSdkError(error, options.signal, deadline);
    } finally {
      deadline.stop();
    }
    const message = checkWireValue(anthropicMessageSchema, value, this.#source);
    this.lastUsage = anthropicUsage(message.usage);
    options.onUsage?.(tokenUsageOf(this.lastUsage));
    return this.#read(messageOfBlocks(message.content), tools);
  }

  protected override async *streamOnce(
    messages: Record<string, unknown>[],
    tools: ToolSpec[],
    options: SendOptions,
  ): AsyncGenerator<StreamChunk> {
    const deadline = new IdleDeadline(this.#timeoutMs, this.#source);
    const assembler = new AnthropicStreamAssembler();
    try {
      const stream = await this.#sdk.messages.create(
        { ...this.#params(messages, tools, options), stream: true },
        { signal: combine(options.signal, deadline.signal) },
      );
      deadline.touch();
      for await (const event of stream) {
        deadline.touch();
        yield* assembler.push(event, this.#source);
      }
    } catch (error) {
      throw mapSdkError(error, options.signal, deadline, true);
    } finally {
      deadline.stop();
    }
    // The SDK ends an aborted stream quietly: say why it ended.
    if (!assembler.stopped) {
      throw mapSdkError(
        new StreamError(`Stream from ${this.#source} ended before message_stop: it was truncated`),
        options.signal,
        deadline,
        true,
      );
    }
    this.lastUsage = assembler.usage;
    options.onUsage?.(tokenUsageOf(this.lastUsage));
    yield { type: ChunkType.FINAL, response: this.#read(messageOfBlocks(assembler.blocks()), tools) };
  }

  get #source(): string {
    return `${this.#sdk.baseURL.replace(/\/+$/, "")}/v1/messages`;
  }

  #params(
    messages: Record<string, unknown>[],
    tools: ToolSpec[],
    options: SendOptions,
  ): Omit<Anthropic.MessageCreateParamsNonStreaming, "stream"> {
    const { system, messages: converted } = toAnthropicMessages(messages);
    const toolChoice =
      options.toolChoice !== undefined
        ? anthropicToolChoice(options.toolChoice)
        : this.#options.toolChoice !== undefined
          ? { type: this.#options.toolChoice }
          : undefined;
    // Anthropic's API knows temperature, top_p, top_k and max_tokens; other overrides are not sent.
    const sampling = withSamplingOverrides(
      { ...this.sampling, maxTokens: this.#options.maxTokens ?? 4096 },
      options.sampling,
    );
    return {
      model: this.model,
      max_tokens: sampling.maxTokens ?? 4096,
      messages: converted,
      ...(system !== undefined && { system }),
      ...(tools.length > 0 && {
        tools: tools.map((tool) => ({
          name: tool.name,
          description: tool.description,
          input_schema: toolJsonSchema(tool) as Anthropic.Tool.InputSchema,
        })),
      }),
      ...(tools.length > 0 && toolChoice !== undefined && { tool_choice: toolChoice }),
      ...(sampling.temperature !== undefined && { temperature: sampling.temperature }),
      ...(sampling.topP !== undefined && { top_p: sampling.topP }),
      ...(sampling.topK !== undefined && { top_k: sampling.topK }),
    };
  }

  #read(message: ReturnType<typeof messageOfBlocks>, tools: ToolSpec[]): LLMResponse {
    return readMessage(message, {
      mode: "native",
      toolNames: tools.map((tool) => tool.name),
      think: undefined,
    });
  }
}

function combine(signal: AbortSignal | undefined, deadline: AbortSignal): AbortSignal {
  return signal ? AbortSignal.any([signal, deadline]) : deadline;
}

/** The library's error for what the SDK threw (or for a stream that ended early). */
function mapSdkError(
  error: unknown,
  signal: AbortSignal | undefined,
  deadline: IdleDeadline,
  streaming = false,
): unknown {
  if (signal?.aborted) return signal.reason ?? error;
  if (deadline.error) return deadline.error;
  if (error instanceof APIConnectionTimeoutError) {
    return new BackendError(TIMEOUT_STATUS, error.message, `Request timed out: ${error.message}`, {
      cause: error,
    });
  }
  if (error instanceof APIConnectionError) {
    const detail = describeErrorChain(error);
    return new BackendError(UNREACHABLE_STATUS, detail, `Cannot reach the Anthropic API: ${detail}`, {
      cause: error,
    });
  }
  if (error instanceof APIError) {
    const body = error.error === undefined ? error.message : JSON.stringify(error.error);
    const status = error.status ?? STATUS_OF_ERROR_TYPE[error.type ?? ""] ?? 500;
    return new BackendError(status, body, `Anthropic API error ${status}: ${error.message}`, {
      cause: error,
      retryAfterSeconds: parseRetryAfter(error.headers?.get("retry-after")),
    });
  }
  if (streaming && !(error instanceof StreamError) && error instanceof Error) {
    return new StreamError(`Stream from the Anthropic API failed: ${describeErrorChain(error)}`);
  }
  return error;
}
