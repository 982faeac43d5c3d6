/** Context management: token estimation, budget warnings and deterministic compaction strategies. */
export type { CompactOptions, CompactResult, CompactStrategy } from "./compact-strategy.ts";
export {
  type CompactEvent,
  ContextManager,
  type ContextManagerOptions,
  type ThresholdEvent,
} from "./context-manager.ts";
export { NoCompact } from "./no-compact.ts";
export { SlidingWindowCompact, type SlidingWindowCompactOptions } from "./sliding-window-compact.ts";
export { isStepSummary } from "./step-summary.ts";
export { TieredCompact, type TieredCompactOptions } from "./tiered-compact.ts";
export {
  charRatioEstimator,
  estimateTokensByChars,
  MESSAGE_OVERHEAD_TOKENS,
  type TokenEstimator,
} from "./token-estimator.ts";
export { DROPPED_RESULT_CONTENT } from "./tool-result-compaction.ts";
