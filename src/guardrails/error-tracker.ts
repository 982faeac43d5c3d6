/**
 * ErrorTracker: consecutive retry and tool-error budgets.
 */

/** Options of `ErrorTracker`. */
export interface ErrorTrackerOptions {
  /** Consecutive formatting failures tolerated; the next one exhausts the budget. */
  maxRetries?: number;
  /** Consecutive failing tool batches tolerated; the next one exhausts the budget. */
  maxToolErrors?: number;
}

/** True when `count` consecutive failures exceed a budget of `max`. */
export function isBudgetExceeded(count: number, max: number): boolean {
  return count > max;
}

/**
 * Tracks consecutive retries and tool errors against their limits. Stateful: one per run.
 * With `maxRetries = 3`, three nudges are allowed and the fourth failure exhausts it.
 */
export class ErrorTracker {
  readonly maxRetries: number;
  readonly maxToolErrors: number;
  #retries = 0;
  #toolErrors = 0;

  constructor(options: ErrorTrackerOptions = {}) {
    this.maxRetries = assertCount("maxRetries", options.maxRetries ?? 3);
    this.maxToolErrors = assertCount("maxToolErrors", options.maxToolErrors ?? 2);
  }

  /** Count one formatting failure (text or unknown tool). */
  recordRetry(): void {
    this.#retries += 1;
  }

  /** A valid tool call arrived: the retry streak is over. */
  resetRetries(): void {
    this.#retries = 0;
  }

  /** Count a batch outcome: success resets the streak, a soft error (ToolResolutionError) leaves it. */
  recordResult(success: boolean, isSoftError = false): void {
    if (success) this.#toolErrors = 0;
    else if (!isSoftError) this.#toolErrors += 1;
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
