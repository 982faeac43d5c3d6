/**
 * Statistics for eval reports: Wilson score intervals for success rates and the exact McNemar
 * test for paired comparisons (same scenario, same run, two configs).
 */

/** A proportion with its 95% Wilson interval. */
export interface Interval {
  estimate: number;
  low: number;
  high: number;
}

/**
 * The Wilson score interval of `successes` out of `trials` (default z = 1.96, 95%). Unlike the
 * normal approximation it stays inside [0, 1] and is sensible at 0/n and n/n.
 * @example wilsonInterval(9, 10) // { estimate: 0.9, low: 0.596, high: 0.982 }
 */
export function wilsonInterval(successes: number, trials: number, z = 1.96): Interval {
  if (trials === 0) return { estimate: 0, low: 0, high: 1 };
  const p = successes / trials;
  const z2 = z * z;
  const denominator = 1 + z2 / trials;
  const center = (p + z2 / (2 * trials)) / denominator;
  const half = (z * Math.sqrt((p * (1 - p)) / trials + z2 / (4 * trials * trials))) / denominator;
  return { estimate: p, low: Math.max(0, center - half), high: Math.min(1, center + half) };
}

const lnFactorials: number[] = [0];

function lnFactorial(n: number): number {
  for (let index = lnFactorials.length; index <= n; index += 1) {
    lnFactorials.push((lnFactorials[index - 1] as number) + Math.log(index));
  }
  return lnFactorials[n] as number;
}

/** A paired comparison of two configs over the same runs. */
export interface McNemarResult {
  /** Pairs the first config got right and the second wrong. */
  onlyFirst: number;
  /** Pairs the second config got right and the first wrong. */
  onlySecond: number;
  /** Two-sided exact p-value (binomial on the discordant pairs, p = 0.5). */
  pValue: number;
}

/**
 * The exact McNemar test on the discordant pair counts.
 * @example mcnemarExact(10, 1).pValue // ≈ 0.0117
 */
export function mcnemarExact(onlyFirst: number, onlySecond: number): McNemarResult {
  const n = onlyFirst + onlySecond;
  if (n === 0) return { onlyFirst, onlySecond, pValue: 1 };
  const k = Math.min(onlyFirst, onlySecond);
  let tail = 0;
  for (let index = 0; index <= k; index += 1) {
    tail += Math.exp(lnFactorial(n) - lnFactorial(index) - lnFactorial(n - index) - n * Math.LN2);
  }
  return { onlyFirst, onlySecond, pValue: Math.min(1, 2 * tail) };
}

/** Mean of the numbers, or null for none. */
export function mean(values: readonly number[]): number | null {
  return values.length === 0 ? null : values.reduce((sum, value) => sum + value, 0) / values.length;
}
