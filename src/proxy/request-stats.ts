/**
 * What one request cost and what the guardrails did for it: backend time, LLM calls, rescues,
 * nudges and compactions. The chat service and the forwarding path fill it in; the access log and
 * the metrics read it when the answer has been sent.
 */
import type { Context } from "hono";
import { ContextBudgetExceeded } from "../core/errors.ts";
import { type Message, MessageType } from "../core/messages.ts";
import type { RunObserver } from "../core/run-observer.ts";
import type { LLMResponse } from "../core/types.ts";

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
  /** Text answers taken as they stood by the prose policy (no sign of a call attempt, no nudge). */
  proseAnswers: number;
  /** Calls whose tool name was a near miss of an offered tool (case, separators, a prefix). */
  renamedTools: number;
  /** Calls the parallel follow-up added to the answer (the model continued after its first call). */
  followUpCalls: number;
  /**
   * Rescued calls declined (ADR 040, ADR 041): the request was answered in text. Calls the
   * call-confidence gate declined and invented ones (`ungroundedCalls`) alike.
   */
  declinedCalls: number;
  /** Of `declinedCalls`, those declined because no argument value appeared in the conversation (ADR 041). */
  ungroundedCalls: number;
  /** The model's probability of opening its first answer with a call, when the gate asked (ADR 040). */
  callConfidence?: number | undefined;
  /** What the call-loop guard did (ADR 020): a note, narrowed tools, or the turn stopped; undefined: nothing. */
  loopGuard?: "note" | "narrow" | "stop" | undefined;
  /** Calls the permission policy denied (ADR 021). */
  deniedCalls: number;
  /** Generations cut off as degenerate repetition (ADR 022). */
  degenerate: number;
  /** Answers whose calls were read from the end of unclosed reasoning (ADR 027, `--think-calls`). */
  thinkCalls: number;
  /** The tools the request had and those it was sent with, when narrowing left some out (ADR 028). */
  narrowed?: { total: number; offered: number } | undefined;
  /** Sees the request's messages, compactions and backend calls as they happen (`forge proxy --watch`). */
  observer?: RequestObserver | undefined;
  /** The request's id (`x-request-id`), set by the observing middleware. */
  requestId?: string | undefined;
  /** The W3C `traceparent` header the client sent (its span), set by the observing middleware. */
  traceparent?: string | undefined;
  /** An observer of the request's guarded run besides the proxy's own (`ProxyOptions.observeRequest`). */
  runObserver?: RunObserver | undefined;
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
    proseAnswers: 0,
    renamedTools: 0,
    followUpCalls: 0,
    declinedCalls: 0,
    ungroundedCalls: 0,
    deniedCalls: 0,
    degenerate: 0,
    thinkCalls: 0,
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

/** The run observer that fills a request's counters; it also remembers the last answer. */
export interface RequestStatsObserver extends RunObserver {
  /** The last completed answer; null before the first. */
  readonly lastResponse: LLMResponse | null;
  /** Whether the last completed answer was text (not a tool-call list). */
  readonly lastAnswerWasText: boolean;
}

/**
 * An observer of a request's run that counts into `stats` (backend calls and time, nudges,
 * compactions) and tells the request's own observer (`stats.observer`, `forge proxy --watch`). A
 * prompt the proxy refused before sending it (`ContextBudgetExceeded`) reached no backend: it is
 * not counted as a backend call.
 */
export function observeRequestStats(stats: RequestStats): RequestStatsObserver {
  let lastResponse: LLMResponse | null = null;
  return {
    get lastResponse() {
      return lastResponse;
    },
    get lastAnswerWasText() {
      return lastResponse !== null && !Array.isArray(lastResponse);
    },
    onLLMCallEnd({ startedAt, messages, response, error, durationMs }) {
      if (error instanceof ContextBudgetExceeded) return;
      stats.backendCalls += 1;
      stats.backendMs += durationMs;
      if (response !== null) lastResponse = response;
      stats.observer?.onBackendCall({ startedAt, messages, response, error });
    },
    onMessage: (message) => noteAppendedMessage(stats, message),
    onCompaction({ before, after, iteration }) {
      stats.compactions += 1;
      // The step index the compactor was given: the LLM calls made before this one.
      stats.observer?.onCompaction(before, after, iteration - 1);
    },
  };
}
