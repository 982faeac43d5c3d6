/**
 * The one retrying wrapper of the HTTP clients: `send` and `sendStream` run the client's single
 * attempt (`sendOnce`, `streamOnce`) under its retry policy (ADR 006), each retry said in its log.
 */
import type { ToolSpec } from "../core/tools.ts";
import type { LLMResponse, SendOptions, StreamChunk } from "../core/types.ts";
import {
  type PlannedRetry,
  type RetryOptions,
  type RetryPolicy,
  resolveRetryPolicy,
  withRetries,
  withStreamRetries,
} from "./retry.ts";

/** A client whose calls are retried: subclasses give one attempt of each call and say a retry. */
export abstract class RetryingClient {
  /** The retry bounds and backoff, with defaults applied. */
  readonly retryPolicy: Readonly<RetryPolicy>;

  constructor(options: RetryOptions) {
    this.retryPolicy = resolveRetryPolicy(options);
  }

  send(
    messages: Record<string, unknown>[],
    tools: ToolSpec[] = [],
    options: SendOptions = {},
  ): Promise<LLMResponse> {
    return withRetries(
      () => this.sendOnce(messages, tools, options),
      this.retryPolicy,
      options.signal,
      (retry) => this.logRetry(retry),
    );
  }

  sendStream(
    messages: Record<string, unknown>[],
    tools: ToolSpec[] = [],
    options: SendOptions = {},
  ): AsyncIterable<StreamChunk> {
    return withStreamRetries(
      () => this.streamOnce(messages, tools, options),
      this.retryPolicy,
      options.signal,
      (retry) => this.logRetry(retry),
    );
  }

  /** One attempt of `send`. */
  protected abstract sendOnce(
    messages: Record<string, unknown>[],
    tools: ToolSpec[],
    options: SendOptions,
  ): Promise<LLMResponse>;

  /** One attempt of `sendStream`. */
  protected abstract streamOnce(
    messages: Record<string, unknown>[],
    tools: ToolSpec[],
    options: SendOptions,
  ): AsyncIterable<StreamChunk>;

  /** Say a retry in the client's log. */
  protected abstract logRetry(retry: PlannedRetry): void;
}
