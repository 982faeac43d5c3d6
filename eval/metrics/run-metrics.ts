/**
 * Pure measurements of one run from its messages and exchanges: nudges by kind, rescues, tool
 * errors, the terminal call, and compaction.
 */
import { type Message, MessageRole, MessageType } from "../../src/core/messages.ts";
import { rescueToolCall } from "../../src/prompts/index.ts";
import type { RecordedExchange } from "../run/recording-client.ts";
import type { NudgeCounts, TimedCompaction } from "../run/types.ts";
import type { TerminalCall } from "../scenarios/scenario.ts";

/** No nudges. */
export function emptyNudges(): NudgeCounts {
  return { retry: 0, unknown_tool: 0, step: 0, prerequisite: 0 };
}

/**
 * Nudges by kind: one per retry nudge (text), per unknown tool, per premature terminal call
 * and per prerequisite violation. `[NotRun]` replies to the other calls of a rejected batch are
 * not nudges of their own.
 */
export function countNudges(messages: readonly Message[]): NudgeCounts {
  const counts = emptyNudges();
  for (const message of messages) {
    const { type } = message.metadata;
    if (message.content.includes("[NotRun]")) continue;
    if (type === MessageType.RETRY_NUDGE) {
      if (message.role === MessageRole.USER) counts.retry += 1;
      else counts.unknown_tool += 1;
    } else if (type === MessageType.STEP_NUDGE) {
      counts.step += 1;
    } else if (type === MessageType.PREREQUISITE_NUDGE) {
      counts.prerequisite += 1;
    }
  }
  return counts;
}

/** Text responses that rescue turned into tool calls (only when rescue is on). */
export function countRescues(
  exchanges: readonly RecordedExchange[],
  toolNames: readonly string[],
  rescueEnabled: boolean,
): number {
  if (!rescueEnabled) return 0;
  return exchanges.filter((exchange) => {
    const response = exchange.response;
    return (
      response !== null &&
      !Array.isArray(response) &&
      rescueToolCall(response.content, [...toolNames]) !== null
    );
  }).length;
}

/** Tool results that report an error (`[ToolError] …`). */
export function countToolErrors(messages: readonly Message[]): number {
  return messages.filter(
    (message) =>
      message.metadata.type === MessageType.TOOL_RESULT && message.content.startsWith("[ToolError]"),
  ).length;
}

/** Executed tool calls (calls of accepted batches). */
export function countToolCalls(messages: readonly Message[]): number {
  const answeredByResult = new Set(
    messages
      .filter((message) => message.metadata.type === MessageType.TOOL_RESULT)
      .map((message) => message.toolCallId),
  );
  return messages
    .filter((message) => message.metadata.type === MessageType.TOOL_CALL)
    .flatMap((message) => message.toolCalls ?? [])
    .filter((call) => answeredByResult.has(call.callId)).length;
}

/**
 * The terminal call a run ended with: the last executed call of a terminal tool whose result
 * is not an error, or null.
 */
export function terminalCallOf(
  messages: readonly Message[],
  terminalTools: readonly string[],
): TerminalCall | null {
  const results = new Map<string, Message>();
  for (const message of messages) {
    if (message.metadata.type === MessageType.TOOL_RESULT && message.toolCallId)
      results.set(message.toolCallId, message);
  }
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index] as Message;
    if (message.metadata.type !== MessageType.TOOL_CALL) continue;
    for (const call of message.toolCalls ?? []) {
      const result = results.get(call.callId);
      if (
        terminalTools.includes(call.name) &&
        result &&
        !/^\[(ToolError|ToolResolutionError)\]/.test(result.content)
      ) {
        return { tool: call.name, args: call.args };
      }
    }
  }
  return null;
}

/** Compaction events and the highest phase reached. */
export function summarizeCompactions(events: readonly TimedCompaction[]): {
  compactions: number;
  maxPhase: number;
} {
  return {
    compactions: events.length,
    maxPhase: events.reduce((max, event) => Math.max(max, event.phaseReached), 0),
  };
}

/** Token totals of a run's exchanges. */
export function tokenTotals(exchanges: readonly RecordedExchange[]) {
  return {
    inputTokens: exchanges.reduce((sum, exchange) => sum + exchange.promptTokens, 0),
    outputTokens: exchanges.reduce((sum, exchange) => sum + exchange.completionTokens, 0),
    peakContextTokens: exchanges.reduce((max, exchange) => Math.max(max, exchange.promptTokens), 0),
    cachedTokens: exchanges.reduce((sum, exchange) => sum + (exchange.cachedTokens ?? 0), 0),
    evaluatedTokens: evaluatedTokensOf(exchanges),
    tokenSource: tokenSourceOf(exchanges),
  };
}

/**
 * The tokens the backend evaluated for a run: its first prompt in full, each later prompt less the
 * part its prompt cache served, and every generated token. The first prompt counts in full so that
 * a cache warmed by an earlier run (the same scenario's system prompt and tools) lowers no run's
 * cost; later cache hits are the run's own (its previous request, kept across nudges and compactions).
 * @example evaluatedTokensOf([{ promptTokens: 900, cachedTokens: 880, completionTokens: 30 }, { promptTokens: 960, cachedTokens: 930, completionTokens: 40 }])
 * // 900 + 30 + (960 − 930) + 40 = 1000
 */
export function evaluatedTokensOf(
  exchanges: readonly Pick<RecordedExchange, "promptTokens" | "cachedTokens" | "completionTokens">[],
): number {
  return exchanges.reduce(
    (sum, exchange, index) =>
      sum +
      exchange.promptTokens -
      (index === 0 ? 0 : Math.min(exchange.cachedTokens ?? 0, exchange.promptTokens)) +
      exchange.completionTokens,
    0,
  );
}

/**
 * Where a run's token figures come from: `backend` when every call's usage was reported by the
 * backend, `estimate` when none was (chars/4), `mixed` otherwise; `none` for a run without calls.
 */
export function tokenSourceOf(exchanges: readonly RecordedExchange[]): TokenSource {
  if (exchanges.length === 0) return "none";
  const reported = exchanges.filter((exchange) => exchange.tokenSource === "backend").length;
  return reported === exchanges.length ? "backend" : reported === 0 ? "estimate" : "mixed";
}

/** Where a run's token figures come from (see `tokenSourceOf`). */
export type TokenSource = "backend" | "estimate" | "mixed" | "none";

/** Wasted calls and efficiency against the ideal. */
export function efficiencyOf(iterations: number, ideal: number, completed: boolean) {
  return {
    wastedCalls: Math.max(0, iterations - ideal),
    efficiency: completed && iterations > 0 ? Math.min(1, ideal / iterations) : null,
  };
}
