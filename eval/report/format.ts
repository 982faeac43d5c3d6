/**
 * Formatting shared by the terminal, Markdown and HTML reports.
 */
import type { Interval } from "../metrics/stats.ts";

/** A fraction as a whole percentage ("87%"), or "–" for null. */
export function percent(value: number | null): string {
  return value === null ? "–" : `${Math.round(value * 100)}%`;
}

/** A Wilson interval as "87% [79–92]". */
export function scoreWithInterval(interval: Interval): string {
  return `${percent(interval.estimate)} [${Math.round(interval.low * 100)}–${Math.round(interval.high * 100)}]`;
}

/** A signed percentage-point delta ("+12 pp", "−3 pp"). */
export function delta(value: number): string {
  const points = Math.round(value * 100);
  return points === 0 ? "±0 pp" : `${points > 0 ? "+" : "−"}${Math.abs(points)} pp`;
}

/** A p-value ("p<0.001", "p=0.04"). */
export function pValue(value: number): string {
  if (value < 0.001) return "p<0.001";
  return `p=${value < 0.01 ? value.toFixed(3) : value.toFixed(2)}`;
}

/** A number with a fixed number of decimals, or "–". */
export function fixed(value: number | null, digits = 2): string {
  return value === null ? "–" : value.toFixed(digits);
}

// Shared with the watch pages.
export { duration, escapeHtml } from "../../src/watch/view/index.ts";

/** A file-name-safe slug of a run key. */
export function slug(text: string): string {
  return text.replace(/[^A-Za-z0-9_-]+/g, "_").slice(0, 150);
}
