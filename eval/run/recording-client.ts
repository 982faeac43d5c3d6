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
} from "../../src/core/types.ts";
import { estimateWireTokens, type WireMessage } from "../sim-model/wire.ts";

/** One LLM call as recorded. */
export interface RecordedExchange {
  /** Milliseconds since the run started. */
  at: number;
  durationMs: number;
  promptTokens: number;
  completionTokens: number;
  response: LLMResponse | null;
  error: { name: string; message: string; statusCode?: number; body?: string } | null;
}

/** Wraps a client and records its exchanges; behaviour is unchanged. */
export class RecordingClient implements LLMClient {
  readonly exchanges: RecordedExchange[] = [];
  readonly #inner: LLMClient;
  readonly #startedAt: number;

  constructor(inner: LLMClient, startedAt = performance.now()) {
    this.#inner = inner;
    this.#startedAt = startedAt;
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
    try {
      const response = await this.#inner.send(messages, tools, options);
      this.#record(started, messages, response, null);
      return response;
    } catch (error) {
      this.#record(started, messages, null, error);
      throw error;
    }
  }

  async *sendStream(
    messages: Record<string, unknown>[],
    tools?: ToolSpec[],
    options?: SendOptions,
  ): AsyncIterable<StreamChunk> {
    const started = performance.now();
    let final: LLMResponse | null = null;
    try {
      for await (const chunk of this.#inner.sendStream(messages, tools, options)) {
        if (chunk.type === ChunkType.FINAL && chunk.response) final = chunk.response;
        yield chunk;
      }
      this.#record(started, messages, final, null);
    } catch (error) {
      this.#record(started, messages, null, error);
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
  ) {
    const now = performance.now();
    this.exchanges.push({
      at: Math.round(started - this.#startedAt),
      durationMs: Math.round((now - started) * 10) / 10,
      promptTokens: estimateWireTokens(messages as WireMessage[]),
      completionTokens: response ? Math.ceil(JSON.stringify(response).length / 4) : 0,
      response,
      error: error === null ? null : describeError(error),
    });
  }
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
