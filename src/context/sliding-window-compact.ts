/**
 * The sliding-window strategy: anchors plus the newest iterations, nothing else.
 */
import type { Message } from "../core/messages.ts";
import {
  type CompactOptions,
  type CompactResult,
  type CompactStrategy,
  resolveEstimators,
} from "./compact-strategy.ts";
import { newestIterations, protectedMask } from "./iterations.ts";
import { withStepSummary } from "./step-summary.ts";
import { pairToolMessages, type ToolPairing } from "./tool-pairing.ts";
import { assertInteger } from "./validate-option.ts";

/** Options of {@link SlidingWindowCompact}. */
export interface SlidingWindowCompactOptions {
  /** Loop iterations (distinct `metadata.stepIndex` values, newest last) kept in full. */
  keepRecent: number;
}

/**
 * Keeps system prompts, user inputs, summaries and the `keepRecent` newest iterations; drops
 * everything else, tool calls included, as whole iterations. A tool call and its answers are
 * kept or dropped together even if they straddle the window's edge. When it drops something and
 * a `stepHint` is given, the step summary carries the hint (see `upsertStepSummary`).
 * Applies whenever it is called (deciding whether to compact is the caller's, as for
 * `TieredCompact`) and always reports phase 1 (the seeds' rule for strategies without phases),
 * even when the window holds everything and nothing could be dropped; `triggerTokens` is unused.
 * @example new ContextManager({ strategy: new SlidingWindowCompact({ keepRecent: 3 }), budgetTokens: 8192 })
 */
export class SlidingWindowCompact implements CompactStrategy {
  readonly keepRecent: number;

  constructor({ keepRecent }: SlidingWindowCompactOptions) {
    assertInteger("SlidingWindowCompact", "keepRecent", keepRecent, 0);
    this.keepRecent = keepRecent;
  }

  compact(messages: readonly Message[], _triggerTokens: number, opts: CompactOptions = {}): CompactResult {
    const estimate = resolveEstimators(opts);
    const tokensBefore = estimate.input(messages);
    const keep = protectedMask(messages, newestIterations(messages, this.keepRecent));
    keepToolGroupsWhole(keep, pairToolMessages(messages));
    // The seeds: a strategy without phases reports 1 whenever it ran, even with nothing to drop.
    if (keep.every(Boolean)) return { messages: [...messages], phase: 1 };
    const windowed = messages.filter((_, index) => keep[index]);
    return {
      messages: withStepSummary(windowed, opts.stepHint ?? "", estimate.candidate, tokensBefore),
      phase: 1,
    };
  }
}

/** Keep a tool-call message and all its answers when any one of them is kept. */
function keepToolGroupsWhole(keep: boolean[], pairing: ToolPairing): void {
  for (const [owner, answers] of pairing.answersOf) {
    const group = [owner, ...answers];
    if (group.some((index) => keep[index])) for (const index of group) keep[index] = true;
  }
}
