/**
 * The context manager: counts a history's prompt tokens (the backend's own count when it reported
 * one, an estimate otherwise), warns as it fills the budget, and runs the compaction strategy
 * when it crosses the threshold, down to a lower target so the prompt prefix stays put for a while.
 */
import { extendsHistory } from "../core/history.ts";
import { createMessage, type Message, MessageRole, MessageType } from "../core/messages.ts";
import type { CompactionMeasure } from "../core/run-observer.ts";
import { type ToolSpec, toOpenAITool } from "../core/tools.ts";
import type { CompactStrategy } from "./compact-strategy.ts";
import { crossedThresholds } from "./threshold-warnings.ts";
import { TokenCounter } from "./token-counter.ts";
import { estimateTokensByChars, type TokenEstimator } from "./token-estimator.ts";
import { assertFraction, assertInteger } from "./validate-option.ts";

/** What one compaction did, for logging and UIs. */
export type CompactEvent = CompactionMeasure;

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
  /**
   * The prompt budget in tokens, a positive integer: what one request's prompt may cost, the tools
   * list included (the context window less the reply's reserve).
   */
  budgetTokens: number;
  /** Compaction starts above `budgetTokens × compactThreshold`; in (0, 1]. Default 0.75. */
  compactThreshold?: number;
  /**
   * Compaction brings the history down to `budgetTokens × compactTarget`, in (0, compactThreshold].
   * A target under the threshold (hysteresis) means a long run compacts rarely, and between two
   * compactions the prompt only grows at its end, so a server's prompt cache (llama-server
   * `cache_prompt`) reuses it instead of evaluating it again. Equal to `compactThreshold`: compact
   * just under the threshold (no hysteresis). Default `compactThreshold × 2/3` (0.5 by default).
   */
  compactTarget?: number;
  onCompact?: (event: CompactEvent) => void;
  /** Per-message estimator; default {@link estimateTokensByChars}. Must be pure. */
  estimateTokens?: TokenEstimator;
  /** Budget fractions in (0, 1] that each fire `onThreshold` once when usage first reaches them. */
  warnAt?: readonly number[];
  onThreshold?: (event: ThresholdEvent) => void;
  /** The tools the model is offered: their JSON is counted with every history (see `setTools`). */
  tools?: readonly ToolSpec[];
}

/** The backend's count of the last history sent, and the estimate of the same history. */
interface Observed {
  /** The history as sent, and a copy of it to notice in-place edits. */
  sent: readonly Message[];
  copy: readonly Message[];
  promptTokens: number;
  /** The estimate of `sent` without the tools (the `TokenCounter` total). */
  messageEstimate: number;
}

/** How the estimate compared with the backend's count the last time both were known. */
interface Calibration {
  ratio: number;
  offset: number;
}

/**
 * Keeps a history under its token budget. Call `maybeCompact` once per loop iteration, before
 * inference, and `observeUsage` with each answer's `usage.prompt_tokens` (`SendOptions.onUsage`).
 *
 * The count it decides on: the backend's prompt tokens for the last history sent, plus the
 * estimate of the messages appended since (the reply, tool results, nudges); before the first
 * answer, and for a compacted history, the estimate of the messages and the tools list, scaled
 * by how the estimate compared with the backend's last count (never below it).
 * Estimates are cached per message and per growing history (see `TokenCounter`), so each
 * iteration estimates only the messages appended since the last one. Invalid options throw a
 * `RangeError` naming the option (a `TypeError` for a strategy without `compact`).
 * @example
 * const context = new ContextManager({ strategy: new TieredCompact(), budgetTokens: 8192, warnAt: [0.5, 0.9] });
 * messages = context.maybeCompact(messages, iteration, steps.summaryHint());
 * const response = await client.send(wire, tools, { onUsage: (usage) => context.observeUsage(messages, usage.promptTokens) });
 */
export class ContextManager {
  readonly strategy: CompactStrategy;
  readonly budgetTokens: number;
  readonly compactThreshold: number;
  readonly compactTarget: number;
  readonly warnAt: readonly number[];
  readonly #counter: TokenCounter;
  readonly #estimator: TokenEstimator;
  readonly #onCompact: ((event: CompactEvent) => void) | undefined;
  readonly #onThreshold: ((event: ThresholdEvent) => void) | undefined;
  readonly #fired = new Set<number>();
  /** Warnings fired and not yet taken by the loop (`takeWarnings`). */
  #pending: ThresholdEvent[] = [];
  /** The last compaction, not yet taken by the loop (`takeCompaction`). */
  #compaction: CompactEvent | undefined;
  #toolTokens = 0;
  #observed: Observed | null = null;
  #calibration: Calibration | null = null;

  constructor(options: ContextManagerOptions) {
    const { strategy, budgetTokens, compactThreshold = 0.75, warnAt = [] } = options;
    if (typeof strategy?.compact !== "function") {
      throw new TypeError("ContextManager: strategy must implement compact(messages, triggerTokens, opts).");
    }
    assertInteger("ContextManager", "budgetTokens", budgetTokens, 1);
    assertFraction("ContextManager", "compactThreshold", compactThreshold);
    const compactTarget = options.compactTarget ?? (compactThreshold * 2) / 3;
    assertFraction("ContextManager", "compactTarget", compactTarget);
    if (compactTarget > compactThreshold) {
      throw new RangeError(
        `ContextManager: compactTarget must be <= compactThreshold (${compactThreshold}), got ${compactTarget}; compaction would end above the level that starts it.`,
      );
    }
    for (const fraction of warnAt) assertFraction("ContextManager", "warnAt[]", fraction);
    this.strategy = strategy;
    this.budgetTokens = budgetTokens;
    this.compactThreshold = compactThreshold;
    this.compactTarget = compactTarget;
    this.warnAt = [...warnAt];
    this.#estimator = options.estimateTokens ?? estimateTokensByChars;
    this.#counter = new TokenCounter(this.#estimator);
    this.#onCompact = options.onCompact;
    this.#onThreshold = options.onThreshold;
    if (options.tools) this.setTools(options.tools);
  }

  /**
   * A manager with these settings, strategy, estimator and tools list, and state of its own: the
   * backend's last count, the calibration, the warnings fired. `WorkflowRunner` takes one for each
   * run, so runs under way at once on one runner never count, calibrate or warn from each other's
   * histories. `hooks` are called after this manager's own `onCompact` / `onThreshold`, with the
   * same event object.
   *
   * The copy keeps this manager's behaviour: it has the same prototype (a subclass's overrides,
   * e.g. of `maybeCompact`, are called in every run) and a shallow copy of its own properties (a
   * method set on the instance, a subclass's fields; an object such a field holds is shared with
   * the runs, a number is the run's own). The subclass's constructor is not run again. A subclass
   * that needs more (a fresh field per run) overrides `forRun` and adjusts `super.forRun()`.
   * @example const perRun = contextManager.forRun({ onCompact: (event) => log(event) });
   */
  forRun(hooks: Pick<ContextManagerOptions, "onCompact" | "onThreshold"> = {}): ContextManager {
    const manager = new ContextManager({
      strategy: this.strategy,
      budgetTokens: this.budgetTokens,
      compactThreshold: this.compactThreshold,
      compactTarget: this.compactTarget,
      warnAt: this.warnAt,
      estimateTokens: this.#estimator,
      ...chained("onCompact", this.#onCompact, hooks.onCompact),
      ...chained("onThreshold", this.#onThreshold, hooks.onThreshold),
    });
    manager.#toolTokens = this.#toolTokens;
    // The caller's class and instance overrides, so the loop calls what it was given.
    Object.setPrototypeOf(manager, Object.getPrototypeOf(this));
    for (const key of Reflect.ownKeys(this)) {
      const descriptor = Object.getOwnPropertyDescriptor(this, key);
      if (descriptor) Object.defineProperty(manager, key, descriptor);
    }
    return manager;
  }

  /** Tokens above which `maybeCompact` compacts: `budgetTokens × compactThreshold`. */
  get triggerTokens(): number {
    return this.budgetTokens * this.compactThreshold;
  }

  /** Tokens a compaction aims to get under: `budgetTokens × compactTarget`. */
  get targetTokens(): number {
    return this.budgetTokens * this.compactTarget;
  }

  /** The estimated tokens of the tools list, counted with every history that has no backend count. */
  get toolTokens(): number {
    return this.#toolTokens;
  }

  /** Estimated tokens of a history's messages (no tools, no backend count). */
  estimateTokens(messages: readonly Message[]): number {
    return this.#counter.count(messages);
  }

  /**
   * The tools offered with every request from now on: their JSON (as OpenAI `tools` entries) is
   * estimated once and counted with each history the backend has not counted yet.
   */
  setTools(tools: readonly ToolSpec[]): void {
    this.#toolTokens =
      tools.length === 0
        ? 0
        : this.#estimator(
            createMessage(MessageRole.SYSTEM, JSON.stringify(tools.map(toOpenAITool)), {
              type: MessageType.SYSTEM_PROMPT,
            }),
          );
  }

  /**
   * Record the backend's prompt tokens for the history that was sent (`usage.prompt_tokens`, or an
   * exact count from the server's tokenizer). Later counts of that history, or of one that extends
   * it, start from this number; it also calibrates the estimate of histories it has not counted.
   * @throws RangeError when `promptTokens` is not an integer >= 0.
   */
  observeUsage(sent: readonly Message[], promptTokens: number): void {
    assertInteger("ContextManager.observeUsage", "promptTokens", promptTokens, 0);
    const messageEstimate = this.#counter.count(sent);
    const estimate = messageEstimate + this.#toolTokens;
    this.#observed = { sent, copy: [...sent], promptTokens, messageEstimate };
    this.#calibration = { ratio: promptTokens / Math.max(1, estimate), offset: promptTokens - estimate };
  }

  /**
   * The prompt tokens `maybeCompact` decides on for `messages`: the backend's last count plus the
   * estimate of what was appended since, or the (calibrated) estimate with the tools list.
   */
  countTokens(messages: readonly Message[]): number {
    const estimate = this.#counter.count(messages);
    const observed = this.#observed;
    if (observed !== null && extendsObserved(messages, observed)) {
      return observed.promptTokens + (estimate - observed.messageEstimate);
    }
    return this.#calibrated(estimate + this.#toolTokens);
  }

  /**
   * Fire any newly reached warnings, then compact when the count is over `triggerTokens`, asking
   * the strategy for `targetTokens` or less. Returns `messages` itself when nothing was compacted,
   * else the strategy's new array; the input is never mutated. `onCompact` fires only when the
   * strategy changed something.
   */
  maybeCompact<T extends readonly Message[]>(messages: T, stepIndex = 0, stepHint = ""): T | Message[] {
    const tokensBefore = this.countTokens(messages);
    this.#warn(tokensBefore, stepIndex);
    if (tokensBefore <= this.triggerTokens) return messages;
    const tools = this.#toolTokens;
    const result = this.strategy.compact(messages, this.targetTokens, {
      stepHint,
      // Trial phases are peeked at: only the history kept in the end enters the cache.
      estimateTokens: (history) => this.#calibrated(this.#counter.peek(history) + tools),
    });
    if (result.phase === 0) return messages;
    // Also makes the compacted array the counter's running total for the next iteration.
    const tokensAfter = this.countTokens(result.messages);
    this.#rearm(tokensAfter);
    const event: CompactEvent = {
      stepIndex,
      tokensBefore,
      tokensAfter,
      budgetTokens: this.budgetTokens,
      messagesBefore: messages.length,
      messagesAfter: result.messages.length,
      phaseReached: result.phase,
    };
    this.#compaction = event;
    this.#onCompact?.(event);
    return result.messages;
  }

  /** Re-arm every `warnAt` fraction, e.g. before a new run on the same manager. */
  resetWarnings(): void {
    this.#fired.clear();
    this.#pending = [];
  }

  /**
   * The warnings fired since the last call, for the loop to tell the model (a transient
   * CONTEXT_WARNING message). A warning a compaction made moot in the same `maybeCompact` is not
   * returned.
   */
  takeWarnings(): ThresholdEvent[] {
    const taken = this.#pending;
    this.#pending = [];
    return taken;
  }

  /**
   * The last compaction since the last call (the same object `onCompact` got), or undefined: the
   * loop tells it to the run's observers (`RunObserver.onCompaction`'s `measure`).
   */
  takeCompaction(): CompactEvent | undefined {
    const taken = this.#compaction;
    this.#compaction = undefined;
    return taken;
  }

  /** After a compaction: fractions the history is now below fire again when it grows back. */
  #rearm(tokens: number): void {
    const usage = tokens / this.budgetTokens;
    for (const fraction of this.#fired) if (usage < fraction) this.#fired.delete(fraction);
    this.#pending = this.#pending.filter((event) => usage >= event.fraction);
  }

  /**
   * An estimate scaled by the last comparison with the backend's count: by its ratio or its
   * offset, whichever gives more, so a shorter history is never assumed cheaper than it was.
   */
  #calibrated(estimate: number): number {
    const calibration = this.#calibration;
    if (calibration === null) return estimate;
    return Math.max(0, Math.ceil(estimate * calibration.ratio), estimate + calibration.offset);
  }

  #warn(tokens: number, stepIndex: number): void {
    for (const fraction of crossedThresholds(this.warnAt, this.#fired, tokens / this.budgetTokens)) {
      this.#fired.add(fraction);
      const event = { fraction, tokens, budgetTokens: this.budgetTokens, stepIndex };
      this.#pending.push(event);
      // Bounded for managers whose warnings nobody takes (middleware users).
      if (this.#pending.length > this.warnAt.length) this.#pending.shift();
      this.#onThreshold?.(event);
    }
  }
}

/** Whether `messages` is the observed history or grew from it by appending, unedited. */
function extendsObserved(messages: readonly Message[], observed: Observed): boolean {
  if (extendsHistory(messages, observed.sent)) return true;
  const { copy } = observed;
  if (messages.length < copy.length) return false;
  for (let index = 0; index < copy.length; index++) {
    if (messages[index] !== copy[index]) return false;
  }
  return true;
}

/** `{ [key]: first then second }`, or only the one given, or nothing. */
function chained<K extends string, E>(
  key: K,
  first: ((event: E) => void) | undefined,
  second: ((event: E) => void) | undefined,
): Partial<Record<K, (event: E) => void>> {
  const hook =
    first && second
      ? (event: E) => {
          first(event);
          second(event);
        }
      : (first ?? second);
  return hook ? ({ [key]: hook } as Record<K, (event: E) => void>) : {};
}
