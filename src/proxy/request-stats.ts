/**
 * What one request cost and what the guardrails did for it: backend time, LLM calls, rescues,
 * nudges and compactions. The chat service and the forwarding path fill it in; the access log and
 * the metrics read it when the answer has been sent.
 */
import type { Context } from "hono";
import { type Message, MessageType } from "../core/messages.ts";
import { ChunkType, type LLMClient, type LLMResponse, type StreamChunk } from "../core/types.ts";
import type { HistoryCompactor } from "../machines/workflow.machine.ts";

/** Counters of one request. */
export interface RequestStats {
  /** The model the client asked for, when it named one. */
  model: string | undefined;
  /** Milliseconds spent waiting for the backend, all calls together. */
  backendMs: number;
  /** Calls made to the backend (LLM calls, or the one forwarded request). */
  backendCalls: number;
  /** Tool calls recovered from a text answer (the accepted answer was text the rescue parsed). */
  rescues: number;
  /** Messages the proxy added to steer the model: retry, step and prerequisite nudges, unknown-tool errors. */
  nudges: number;
  /** Histories compacted before a call. */
  compactions: number;
  /** The guardrail gave up: the model kept answering prose after the nudges, and that prose is the answer. */
  gaveUp: boolean;
  /** Image parts replaced by a text placeholder (the guarded path is text-only). */
  omittedImages: number;
  /** Sees the request's messages, compactions and backend calls as they happen (`forge proxy --watch`). */
  observer?: RequestObserver | undefined;
}

/** What a request's observer is told, as it happens. */
export interface RequestObserver {
  /** A message the loop appended (a nudge, the accepted calls). */
  onMessage(message: Message): void;
  /** The history was compacted before a call. */
  onCompaction(before: readonly Message[], after: readonly Message[], stepIndex: number): void;
  /** A backend call ended (`startedAt` from `performance.now()`); `response` null when it threw or streamed. */
  onBackendCall(call: {
    startedAt: number;
    messages: readonly Record<string, unknown>[];
    response: LLMResponse | null;
    error: unknown;
  }): void;
}

/** Fresh counters. */
export function createRequestStats(): RequestStats {
  return {
    model: undefined,
    backendMs: 0,
    backendCalls: 0,
    rescues: 0,
    nudges: 0,
    compactions: 0,
    gaveUp: false,
    omittedImages: 0,
  };
}

/** Retries: backend calls past the first. */
export function retriesOf(stats: RequestStats): number {
  return Math.max(0, stats.backendCalls - 1);
}

const STATS_KEY = "forgeRequestStats";

/** Attach `stats` to a request's context (the observing middleware does, before the routes run). */
export function attachRequestStats(c: Context, stats: RequestStats): void {
  c.set(STATS_KEY as never, stats as never);
}

/** The request's counters; a detached set when nothing observes it (in-process use without the middleware). */
export function requestStatsOf(c: Context): RequestStats {
  const stats = c.get(STATS_KEY as never) as RequestStats | undefined;
  if (stats) return stats;
  const detached = createRequestStats();
  attachRequestStats(c, detached);
  return detached;
}

const NUDGE_TYPES: ReadonlySet<string> = new Set([
  MessageType.RETRY_NUDGE,
  MessageType.STEP_NUDGE,
  MessageType.PREREQUISITE_NUDGE,
  // In inference-only runs no tool executes: a tool result the loop appends is an unknown-tool error.
  MessageType.TOOL_RESULT,
]);

/** Count a message the loop appended, when it is a nudge. */
export function noteAppendedMessage(stats: RequestStats, message: Message): void {
  if (NUDGE_TYPES.has(message.metadata.type)) stats.nudges += 1;
  stats.observer?.onMessage(message);
}

/** A compactor that counts the compactions `inner` makes (it returns a new array when it compacts). */
export function countCompactions(inner: HistoryCompactor, stats: RequestStats): HistoryCompactor {
  return {
    // The backend's counts and the tools reach the inner manager (usage-driven compaction).
    ...(inner.observeUsage && { observeUsage: inner.observeUsage.bind(inner) }),
    ...(inner.setTools && { setTools: inner.setTools.bind(inner) }),
    ...(inner.takeWarnings && { takeWarnings: inner.takeWarnings.bind(inner) }),
    maybeCompact(messages, stepIndex, stepHint) {
      const result = inner.maybeCompact(messages, stepIndex, stepHint);
      if (result !== messages) {
        stats.compactions += 1;
        stats.observer?.onCompaction(messages, result, stepIndex ?? 0);
      }
      return result;
    },
  };
}

/** A client that times and counts every call to `inner`, and remembers its last answer. */
export class CountingClient implements LLMClient {
  readonly apiFormat: LLMClient["apiFormat"];
  readonly #inner: LLMClient;
  readonly #stats: RequestStats;
  /** Whether the last completed answer was text (not a tool-call list). */
  lastAnswerWasText = false;
  /** The last completed answer; null before the first. */
  lastResponse: LLMResponse | null = null;

  constructor(inner: LLMClient, stats: RequestStats) {
    this.apiFormat = inner.apiFormat;
    this.#inner = inner;
    this.#stats = stats;
  }

  async send(...args: Parameters<LLMClient["send"]>): Promise<LLMResponse> {
    const started = performance.now();
    this.#stats.backendCalls += 1;
    const observe = (response: LLMResponse | null, error: unknown) =>
      this.#stats.observer?.onBackendCall({ startedAt: started, messages: args[0], response, error });
    try {
      const response = await this.#inner.send(...args);
      this.lastAnswerWasText = !Array.isArray(response);
      this.lastResponse = response;
      observe(response, null);
      return response;
    } catch (error) {
      observe(null, error);
      throw error;
    } finally {
      this.#stats.backendMs += performance.now() - started;
    }
  }

  /** As `send`: the call is counted and timed, and its FINAL answer remembered. */
  async *sendStream(...args: Parameters<LLMClient["sendStream"]>): AsyncIterable<StreamChunk> {
    const started = performance.now();
    this.#stats.backendCalls += 1;
    const observe = (response: LLMResponse | null, error: unknown) =>
      this.#stats.observer?.onBackendCall({ startedAt: started, messages: args[0], response, error });
    try {
      for await (const chunk of this.#inner.sendStream(...args)) {
        if (chunk.type === ChunkType.FINAL && chunk.response !== undefined) {
          this.lastAnswerWasText = !Array.isArray(chunk.response);
          this.lastResponse = chunk.response;
          observe(chunk.response, null);
        }
        yield chunk;
      }
    } catch (error) {
      observe(null, error);
      throw error;
    } finally {
      this.#stats.backendMs += performance.now() - started;
    }
  }

  getContextLength(): Promise<number | null> {
    return this.#inner.getContextLength();
  }
}
