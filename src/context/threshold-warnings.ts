/**
 * Context-usage warnings: which configured fractions of the budget a new estimate has crossed.
 */

/**
 * The fractions of `warnAt` that `usage` (tokens / budget) has reached and that have not fired
 * yet, ascending and without duplicates.
 * @example crossedThresholds([0.5, 0.8], new Set([0.5]), 0.83) // [0.8]
 */
export function crossedThresholds(
  warnAt: readonly number[],
  fired: ReadonlySet<number>,
  usage: number,
): number[] {
  const crossed = new Set(warnAt.filter((fraction) => usage >= fraction && !fired.has(fraction)));
  return [...crossed].sort((a, b) => a - b);
}
