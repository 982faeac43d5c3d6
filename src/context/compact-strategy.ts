/**
 * The contract every compaction strategy implements.
 */
import type { Message } from "../core/messages.ts";
import { TokenCounter } from "./token-counter.ts";
import { estimateTokensByChars } from "./token-estimator.ts";

/** Extra inputs a strategy may use. */
export interface CompactOptions {
  /** Progress line kept across compaction, e.g. `[Steps completed: search, fetch]`. */
  stepHint?: string;
  /** Estimates a whole history; strategies fall back to the default char heuristic without it. */
  estimateTokens?: (messages: readonly Message[]) => number;
}

/** A strategy's answer: the compacted copy and how far it escalated. */
export interface CompactResult {
  messages: Message[];
  /** 0 = nothing was changed; 1+ = strategy-defined. */
  phase: number;
}

/**
 * Turns a history that is over `triggerTokens` into a shorter one.
 * Implementations are pure: they never mutate the input array or its messages, and return
 * the same output for the same input.
 */
export interface CompactStrategy {
  compact(messages: readonly Message[], triggerTokens: number, opts?: CompactOptions): CompactResult;
}

/** How a strategy estimates histories: its input, and the trial results of its phases. */
export interface StrategyEstimators {
  input: (messages: readonly Message[]) => number;
  candidate: (messages: readonly Message[]) => number;
}

/**
 * The estimators a strategy uses: the caller's `estimateTokens` for both, or else the default
 * char heuristic (total characters / 4) through a counter of this one call, so each input message
 * is measured once across phases and trial results never enter its cache.
 */
export function resolveEstimators(opts: CompactOptions): StrategyEstimators {
  const custom = opts.estimateTokens;
  if (custom) return { input: custom, candidate: custom };
  const counter = new TokenCounter(estimateTokensByChars);
  return {
    input: (messages) => counter.count(messages),
    candidate: (messages) => counter.peek(messages),
  };
}
