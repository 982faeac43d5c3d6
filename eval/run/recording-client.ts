/**
 * A run observer that records every exchange of a run (the response or the error, tokens and
 * timing) so the run can be measured, shown on a timeline and replayed exactly.
 */
import type { LLMCallEndEvent, RunObserver } from "../../src/core/run-observer.ts";
import type { LLMResponse, ToolChoice } from "../../src/core/types.ts";
import { describeThrown } from "../../src/watch/report/index.ts";
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

/** A run's observer that records its LLM calls (`exchanges`, in the order they ended). */
export interface ExchangeRecorder extends RunObserver {
  readonly exchanges: RecordedExchange[];
}

/**
 * An observer that records every LLM call of a run (give it to the run's `observers`); the client
 * is left as it is. Token counts are the backend's (the usage the client reported through
 * `SendOptions.onUsage`); a call whose backend reports none gets a chars/4 estimate, labelled so.
 * `tierNames`: the run's escalation tiers, in order: a call a tier served is labelled with its name.
 */
export function createExchangeRecorder(
  startedAt = performance.now(),
  tierNames: readonly string[] = [],
): ExchangeRecorder {
  const exchanges: RecordedExchange[] = [];
  return {
    exchanges,
    onLLMCallEnd(call: LLMCallEndEvent) {
      const { usage, response, error, toolChoice } = call;
      exchanges.push({
        at: Math.round(call.startedAt - startedAt),
        durationMs: Math.round(call.durationMs * 10) / 10,
        ...(usage
          ? {
              promptTokens: usage.promptTokens,
              completionTokens: usage.completionTokens ?? 0,
              tokenSource: "backend" as const,
              ...(usage.cachedTokens !== undefined && { cachedTokens: usage.cachedTokens }),
              ...(usage.cacheWriteTokens !== undefined && { cacheWriteTokens: usage.cacheWriteTokens }),
            }
          : {
              promptTokens: estimateWireTokens(call.messages as WireMessage[]),
              completionTokens: response ? Math.ceil(JSON.stringify(response).length / 4) : 0,
              tokenSource: "estimate" as const,
            }),
        response,
        error: error === null ? null : describeError(error),
        ...(toolChoice !== undefined && { toolChoice }),
        ...(call.escalationTier !== undefined && {
          client: tierNames[call.escalationTier - 1] ?? `tier ${call.escalationTier}`,
        }),
      });
    },
  };
}

/** An error as JSON (the watch reporter's `describeThrown`), its HTTP body cut to 2,000 characters. */
export function describeError(error: unknown): RecordedExchange["error"] & object {
  const described = describeThrown(error);
  return described.body === undefined ? described : { ...described, body: described.body.slice(0, 2000) };
}
