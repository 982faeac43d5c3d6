/**
 * ErrorTracker: consecutive retry and tool-error budgets.
 */
import { isBudgetExceeded } from "./decisions.ts";
import { DEFAULT_LIMITS } from "./limits.ts";

/** Options of `ErrorTracker`. */
export interface ErrorTrackerOptions {
  /** Consecutive formatting failures tolerated; the next one exhausts the budget. Default 3. */
  maxRetries?: number;
  /** Consecutive failing tool batches tolerated; the next one exhausts the budget. Default 2. */
  maxToolErrors?: number;
}

/**
 * Tracks consecutive retries and tool errors against their limits. Stateful: one per run.
 * With `maxRetries = 3`, three nudges are allowed and the fourth failure exhausts it.
 *
 * As in the seeds, only `resetRetries` and `resetErrors` end a streak: `recordResult(true)` is
 * not a reset, so a batch with one failing call counts as a failure whatever order its calls
 * are recorded in. Reset the tool errors after a batch in which nothing failed.
 * @example
 * for (const call of batch) errors.recordResult(await run(call));
 * if (errors.toolErrorsExhausted) throw …; else if (batchClean) errors.resetErrors();
 */
export class ErrorTracker {
  readonly maxRetries: number;
  readonly maxToolErrors: number;
  #retries = 0;
  #toolErrors = 0;

  constructor(options: ErrorTrackerOptions = {}) {
    this.maxRetries = assertCount("maxRetries", options.maxRetries ?? DEFAULT_LIMITS.maxRetriesPerStep);
    this.maxToolErrors = assertCount("maxToolErrors", options.maxToolErrors ?? DEFAULT_LIMITS.maxToolErrors);
  }

  /** Count one formatting failure (text or unknown tool). */
  recordRetry(): void {
    this.#retries += 1;
  }

  /** A valid tool call arrived: the retry streak is over. */
  resetRetries(): void {
    this.#retries = 0;
  }

  /**
   * Count one call's outcome: a failure adds one tool error, unless it is soft (a
   * ToolResolutionError); a success changes nothing (see the class note).
   */
  recordResult(success: boolean, isSoftError = false): void {
    if (!success && !isSoftError) this.#toolErrors += 1;
  }

  /** Clear the tool-error streak. */
  resetErrors(): void {
    this.#toolErrors = 0;
  }

  get retries(): number {
    return this.#retries;
  }

  get toolErrors(): number {
    return this.#toolErrors;
  }

  get retriesExhausted(): boolean {
    return isBudgetExceeded(this.#retries, this.maxRetries);
  }

  get toolErrorsExhausted(): boolean {
    return isBudgetExceeded(this.#toolErrors, this.maxToolErrors);
  }
}

/** Validate a budget option: a non-negative integer. */
export function assertCount(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 0) {
    throw new RangeError(`${name} must be a non-negative integer, got ${String(value)}`);
  }
  return value;
}

export { isBudgetExceeded };
