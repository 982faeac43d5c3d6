/**
 * A client wrapper that records every exchange of a run (the response or the error, tokens and
 * timing) so the run can be measured, shown on a timeline and replayed exactly.
 */
import type { ToolSpec } from "../../src/core/tools.ts";
import {
  ChunkType,
  type LLMClient,
  type LLMResponse,
  type SendOptions,
  type StreamChunk,
  type TokenUsage,
  type ToolChoice,
} from "../../src/core/types.ts";
import { estimateWireTokens, type WireMessage } from "../sim-model/wire.ts";

/** One LLM call as recorded. */
export interface RecordedExchange {
  /** Milliseconds since the run started. */
  at: number;
  durationMs: number;
  /** The backend's count when it reported usage (`tokenSource: "backend"`), else a chars/4 estimate. */
  promptTokens: number;
  completionTokens: number;
  /** Where the token counts come from; absent in traces written before it was recorded (estimates). */
  tokenSource?: "backend" | "estimate";
  /** Prompt tokens served from the backend's prompt cache, when it says. */
  cachedTokens?: number;
  /** Prompt tokens written to the prompt cache (Anthropic), when it says. */
  cacheWriteTokens?: number;
  response: LLMResponse | null;
  error: { name: string; message: string; statusCode?: number; body?: string } | null;
  /** The call's `SendOptions.toolChoice` when it had one (`"required"` on a forced retry). */
  toolChoice?: ToolChoice;
  /** The escalation tier's name when a stronger client served the call (`reforged+escalation`). */
  client?: string;
}

/**
 * Wraps a client and records its exchanges; behaviour is unchanged. Token counts are the
 * backend's (the usage each client reports through `SendOptions.onUsage`, passed on to the
 * caller's own `onUsage`); a call whose backend reports none gets a chars/4 estimate, labelled so.
 */
export class RecordingClient implements LLMClient {
  readonly exchanges: RecordedExchange[];
  readonly #inner: LLMClient;
  readonly #startedAt: number;
  readonly #label: string | undefined;

  /**
   * `shared`: record into another recorder's exchanges, each labelled with `client` (an escalation
   * tier recorded in the same run's list, in call order).
   */
  constructor(
    inner: LLMClient,
    startedAt = performance.now(),
    shared?: { exchanges: RecordedExchange[]; client: string },
  ) {
    this.#inner = inner;
    this.#startedAt = startedAt;
    this.exchanges = shared?.exchanges ?? [];
    this.#label = shared?.client;
  }

  get apiFormat() {
    return this.#inner.apiFormat;
  }

  async send(
    messages: Record<string, unknown>[],
    tools?: ToolSpec[],
    options?: SendOptions,
  ): Promise<LLMResponse> {
    const started = performance.now();
    const usage = observeUsage(options);
    try {
      const response = await this.#inner.send(messages, tools, usage.options);
      this.#record(started, messages, response, null, usage.reported, options?.toolChoice);
      return response;
    } catch (error) {
      this.#record(started, messages, null, error, usage.reported, options?.toolChoice);
      throw error;
    }
  }

  async *sendStream(
    messages: Record<string, unknown>[],
    tools?: ToolSpec[],
    options?: SendOptions,
  ): AsyncIterable<StreamChunk> {
    const started = performance.now();
    const usage = observeUsage(options);
    let final: LLMResponse | null = null;
    try {
      for await (const chunk of this.#inner.sendStream(messages, tools, usage.options)) {
        if (chunk.type === ChunkType.FINAL && chunk.response) final = chunk.response;
        yield chunk;
      }
      this.#record(started, messages, final, null, usage.reported, options?.toolChoice);
    } catch (error) {
      this.#record(started, messages, null, error, usage.reported, options?.toolChoice);
      throw error;
    }
  }

  getContextLength(): Promise<number | null> {
    return this.#inner.getContextLength();
  }

  #record(
    started: number,
    messages: Record<string, unknown>[],
    response: LLMResponse | null,
    error: unknown,
    reported: () => TokenUsage | null,
    toolChoice: ToolChoice | undefined,
  ) {
    const now = performance.now();
    const usage = reported();
    this.exchanges.push({
      at: Math.round(started - this.#startedAt),
      durationMs: Math.round((now - started) * 10) / 10,
      ...(usage
        ? {
            promptTokens: usage.promptTokens,
            completionTokens: usage.completionTokens ?? 0,
            tokenSource: "backend" as const,
            ...(usage.cachedTokens !== undefined && { cachedTokens: usage.cachedTokens }),
            ...(usage.cacheWriteTokens !== undefined && { cacheWriteTokens: usage.cacheWriteTokens }),
          }
        : {
            promptTokens: estimateWireTokens(messages as WireMessage[]),
            completionTokens: response ? Math.ceil(JSON.stringify(response).length / 4) : 0,
            tokenSource: "estimate" as const,
          }),
      response,
      error: error === null ? null : describeError(error),
      ...(toolChoice !== undefined && { toolChoice }),
      ...(this.#label !== undefined && { client: this.#label }),
    });
  }
}

/** Options whose `onUsage` also keeps the last usage the backend reported, for the record. */
function observeUsage(options: SendOptions | undefined): {
  options: SendOptions;
  reported: () => TokenUsage | null;
} {
  let last: TokenUsage | null = null;
  return {
    options: {
      ...options,
      onUsage: (usage) => {
        last = usage;
        options?.onUsage?.(usage);
      },
    },
    reported: () => last,
  };
}

/** An error as JSON: name, message, and an HTTP status and body when it has them. */
export function describeError(error: unknown): RecordedExchange["error"] & object {
  if (!(error instanceof Error)) return { name: "Error", message: String(error) };
  const { statusCode, body } = error as { statusCode?: unknown; body?: unknown };
  return {
    name: error.name,
    message: error.message,
    ...(typeof statusCode === "number" && { statusCode }),
    ...(typeof body === "string" && { body: body.slice(0, 2000) }),
  };
}
