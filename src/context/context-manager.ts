/**
 * The context manager: estimates a history's tokens, warns as it fills the budget, and runs
 * the compaction strategy when it crosses the threshold.
 */
import type { Message } from "../core/messages.ts";
import type { CompactStrategy } from "./compact-strategy.ts";
import { crossedThresholds } from "./threshold-warnings.ts";
import { TokenCounter } from "./token-counter.ts";
import { estimateTokensByChars, type TokenEstimator } from "./token-estimator.ts";
import { assertFraction, assertInteger } from "./validate-option.ts";

/** What one compaction did, for logging and UIs. */
export interface CompactEvent {
  /** The loop iteration (0-based) that triggered it. */
  stepIndex: number;
  tokensBefore: number;
  tokensAfter: number;
  budgetTokens: number;
  messagesBefore: number;
  messagesAfter: number;
  /** The strategy's phase (1+; 0 never reaches the callback). */
  phaseReached: number;
}

/** Context usage first reached one of the `warnAt` fractions of the budget. */
export interface ThresholdEvent {
  fraction: number;
  tokens: number;
  budgetTokens: number;
  stepIndex: number;
}

/** Options of {@link ContextManager}. */
export interface ContextManagerOptions {
  strategy: CompactStrategy;
  /** The context budget in tokens: a positive integer. */
  budgetTokens: number;
  /** Compaction starts above `budgetTokens × compactThreshold`; in (0, 1]. Default 0.75. */
  compactThreshold?: number;
  onCompact?: (event: CompactEvent) => void;
  /** Per-message estimator; default {@link estimateTokensByChars}. Must be pure. */
  estimateTokens?: TokenEstimator;
  /** Budget fractions in (0, 1] that each fire `onThreshold` once when usage first reaches them. */
  warnAt?: readonly number[];
  onThreshold?: (event: ThresholdEvent) => void;
}

/**
 * Keeps a history under its token budget. Call `maybeCompact` once per loop iteration, before
 * inference. Token counts are cached per message and per growing history (see `TokenCounter`),
 * so each iteration estimates only the messages appended since the last one. Invalid options
 * throw a `RangeError` naming the option (a `TypeError` for a strategy without `compact`).
 * @example
 * const context = new ContextManager({ strategy: new TieredCompact(), budgetTokens: 8192, warnAt: [0.5, 0.9] });
 * messages = context.maybeCompact(messages, iteration, steps.summaryHint());
 */
export class ContextManager {
  readonly strategy: CompactStrategy;
  readonly budgetTokens: number;
  readonly compactThreshold: number;
  readonly warnAt: readonly number[];
  readonly #counter: TokenCounter;
  readonly #onCompact: ((event: CompactEvent) => void) | undefined;
  readonly #onThreshold: ((event: ThresholdEvent) => void) | undefined;
  readonly #fired = new Set<number>();

  constructor(options: ContextManagerOptions) {
    const { strategy, budgetTokens, compactThreshold = 0.75, warnAt = [] } = options;
    if (typeof strategy?.compact !== "function") {
      throw new TypeError("ContextManager: strategy must implement compact(messages, triggerTokens, opts).");
    }
    assertInteger("ContextManager", "budgetTokens", budgetTokens, 1);
    assertFraction("ContextManager", "compactThreshold", compactThreshold);
    for (const fraction of warnAt) assertFraction("ContextManager", "warnAt[]", fraction);
    this.strategy = strategy;
    this.budgetTokens = budgetTokens;
    this.compactThreshold = compactThreshold;
    this.warnAt = [...warnAt];
    this.#counter = new TokenCounter(options.estimateTokens ?? estimateTokensByChars);
    this.#onCompact = options.onCompact;
    this.#onThreshold = options.onThreshold;
  }

  /** Tokens above which `maybeCompact` compacts: `budgetTokens × compactThreshold`. */
  get triggerTokens(): number {
    return this.budgetTokens * this.compactThreshold;
  }

  /** Estimated tokens of a history. */
  estimateTokens(messages: readonly Message[]): number {
    return this.#counter.count(messages);
  }

  /**
   * Fire any newly reached warnings, then compact when the estimate is over `triggerTokens`.
   * Returns `messages` itself when nothing was compacted, else the strategy's new array; the
   * input is never mutated. `onCompact` fires only when the strategy changed something.
   */
  maybeCompact<T extends readonly Message[]>(messages: T, stepIndex = 0, stepHint = ""): T | Message[] {
    const tokensBefore = this.estimateTokens(messages);
    this.#warn(tokensBefore, stepIndex);
    if (tokensBefore <= this.triggerTokens) return messages;
    const result = this.strategy.compact(messages, this.triggerTokens, {
      stepHint,
      // Trial phases are peeked at: only the history kept in the end enters the cache.
      estimateTokens: (history) => this.#counter.peek(history),
    });
    if (result.phase === 0) return messages;
    // Also makes the compacted array the counter's running total for the next iteration.
    const tokensAfter = this.estimateTokens(result.messages);
    this.#onCompact?.({
      stepIndex,
      tokensBefore,
      tokensAfter,
      budgetTokens: this.budgetTokens,
      messagesBefore: messages.length,
      messagesAfter: result.messages.length,
      phaseReached: result.phase,
    });
    return result.messages;
  }

  /** Re-arm every `warnAt` fraction, e.g. before a new run on the same manager. */
  resetWarnings(): void {
    this.#fired.clear();
  }

  #warn(tokens: number, stepIndex: number): void {
    for (const fraction of crossedThresholds(this.warnAt, this.#fired, tokens / this.budgetTokens)) {
      this.#fired.add(fraction);
      this.#onThreshold?.({ fraction, tokens, budgetTokens: this.budgetTokens, stepIndex });
    }
  }
}
