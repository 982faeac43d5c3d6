/**
 * Constructor argument checks shared by the context module; each names the bad option.
 */

/** Throw a `RangeError` unless `value` is an integer >= `min`. */
export function assertInteger(owner: string, option: string, value: number, min: number): void {
  if (!Number.isInteger(value) || value < min) {
    throw new RangeError(`${owner}: ${option} must be an integer >= ${min}, got ${String(value)}.`);
  }
}

/** Throw a `RangeError` unless `value` is a fraction in (0, 1]. */
export function assertFraction(owner: string, option: string, value: number): void {
  if (typeof value !== "number" || !(value > 0 && value <= 1)) {
    throw new RangeError(`${owner}: ${option} must be a number in (0, 1], got ${String(value)}.`);
  }
}
