/**
 * Inline SVG charts for the offline dashboard: score bars with Wilson whiskers, ablation delta
 * bars, and the scenario × config heat map. Pure string builders, no scripts.
 */
import type { Interval } from "../metrics/stats.ts";
import { delta, escapeHtml, percent, pValue } from "./format.ts";

const FONT = `font-family="system-ui, -apple-system, Segoe UI, sans-serif"`;

/** Red (0) → amber (0.5) → green (1). */
export function scoreColor(score: number): string {
  const hue = Math.round(Math.max(0, Math.min(1, score)) * 120);
  return `hsl(${hue} 65% 45%)`;
}

/** A bar of the score chart. */
export interface ScoreBar {
  name: string;
  score: Interval;
  note?: string;
}

/** Horizontal score bars (0–100%) with 95% interval whiskers. */
export function scoreBarChart(bars: readonly ScoreBar[], width = 760): string {
  const label = 190;
  const right = 70;
  const row = 28;
  const top = 24;
  const plot = width - label - right;
  const height = top + bars.length * row + 24;
  const x = (value: number) => label + value * plot;
  const ticks = [0, 0.25, 0.5, 0.75, 1]
    .map(
      (tick) =>
        `<line x1="${x(tick)}" y1="${top - 6}" x2="${x(tick)}" y2="${height - 20}" stroke="#d9dde3"/><text x="${x(tick)}" y="${height - 6}" text-anchor="middle" font-size="11" fill="#667">${percent(tick)}</text>`,
    )
    .join("");
  const body = bars
    .map((bar, index) => {
      const y = top + index * row;
      const { estimate, low, high } = bar.score;
      return [
        `<g class="bar"><title>${escapeHtml(bar.name)}: ${percent(estimate)} (95% CI ${percent(low)}–${percent(high)})${bar.note ? ` ${escapeHtml(bar.note)}` : ""}</title>`,
        `<text x="${label - 8}" y="${y + 15}" text-anchor="end" font-size="12" fill="#223">${escapeHtml(bar.name)}</text>`,
        `<rect x="${label}" y="${y + 3}" width="${Math.max(1, estimate * plot)}" height="${row - 10}" rx="3" fill="${scoreColor(estimate)}"/>`,
        `<line x1="${x(low)}" y1="${y + 9}" x2="${x(high)}" y2="${y + 9}" stroke="#223" stroke-width="1.5"/>`,
        `<line x1="${x(low)}" y1="${y + 5}" x2="${x(low)}" y2="${y + 13}" stroke="#223" stroke-width="1.5"/>`,
        `<line x1="${x(high)}" y1="${y + 5}" x2="${x(high)}" y2="${y + 13}" stroke="#223" stroke-width="1.5"/>`,
        `<text x="${width - right + 8}" y="${y + 15}" font-size="12" fill="#223">${percent(estimate)}</text></g>`,
      ].join("");
    })
    .join("");
  return `<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" aria-label="Score by configuration" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" ${FONT}>${ticks}${body}</svg>`;
}

/** A bar of the delta chart. */
export interface DeltaBar {
  name: string;
  delta: number;
  pValue: number;
}

/** Diverging bars of score differences against the baseline, labelled with McNemar p-values. */
export function deltaChart(bars: readonly DeltaBar[], baseline: string, width = 760): string {
  const label = 190;
  const right = 130;
  const row = 28;
  const top = 24;
  const plot = width - label - right;
  const span = Math.max(0.1, ...bars.map((bar) => Math.abs(bar.delta)));
  const height = top + Math.max(1, bars.length) * row + 24;
  const zero = label + plot / 2;
  const x = (value: number) => zero + (value / span) * (plot / 2);
  const axis = [-span, -span / 2, 0, span / 2, span]
    .map(
      (tick) =>
        `<line x1="${x(tick)}" y1="${top - 6}" x2="${x(tick)}" y2="${height - 20}" stroke="${tick === 0 ? "#556" : "#d9dde3"}"/><text x="${x(tick)}" y="${height - 6}" text-anchor="middle" font-size="11" fill="#667">${delta(tick)}</text>`,
    )
    .join("");
  const body = bars
    .map((bar, index) => {
      const y = top + index * row;
      const significant = bar.pValue < 0.05;
      const fill =
        bar.delta < 0 ? (significant ? "#c0392b" : "#e6a49c") : significant ? "#1e8449" : "#9fd4b0";
      const start = Math.min(x(0), x(bar.delta));
      return [
        `<g class="bar"><title>${escapeHtml(bar.name)} vs ${escapeHtml(baseline)}: ${delta(bar.delta)} (${pValue(bar.pValue)})</title>`,
        `<text x="${label - 8}" y="${y + 15}" text-anchor="end" font-size="12" fill="#223">${escapeHtml(bar.name)}</text>`,
        `<rect x="${start}" y="${y + 3}" width="${Math.max(1, Math.abs(x(bar.delta) - x(0)))}" height="${row - 10}" rx="3" fill="${fill}"/>`,
        `<text x="${width - right + 8}" y="${y + 15}" font-size="12" fill="#223">${delta(bar.delta)} ${pValue(bar.pValue)}</text></g>`,
      ].join("");
    })
    .join("");
  return `<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" aria-label="Ablation deltas" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" ${FONT}>${axis}${body}</svg>`;
}

/** A heat-map cell. */
export interface HeatCell {
  score: number | null;
  title: string;
  href?: string;
}

/** Scenario rows × config columns, colored by score, each cell linking to a run timeline. */
export function heatMap(
  rows: readonly string[],
  columns: readonly string[],
  cell: (row: string, column: string) => HeatCell,
): string {
  const label = 240;
  const cellWidth = 74;
  const cellHeight = 22;
  const top = 110;
  const width = label + columns.length * cellWidth + 10;
  const height = top + rows.length * cellHeight + 10;
  const header = columns
    .map((column, index) => {
      const x = label + index * cellWidth + cellWidth / 2;
      return `<text transform="translate(${x},${top - 8}) rotate(-40)" font-size="11" fill="#223">${escapeHtml(column)}</text>`;
    })
    .join("");
  const body = rows
    .map((row, rowIndex) => {
      const y = top + rowIndex * cellHeight;
      const cells = columns
        .map((column, columnIndex) => {
          const value = cell(row, column);
          const x = label + columnIndex * cellWidth;
          const fill = value.score === null ? "#eef0f3" : scoreColor(value.score);
          const inner = `<rect x="${x + 1}" y="${y + 1}" width="${cellWidth - 2}" height="${cellHeight - 2}" fill="${fill}"/><text x="${x + cellWidth / 2}" y="${y + 15}" text-anchor="middle" font-size="11" fill="${value.score === null ? "#889" : "#fff"}">${value.score === null ? "–" : percent(value.score)}</text>`;
          const titled = `<title>${escapeHtml(value.title)}</title>${inner}`;
          return value.href ? `<a href="${escapeHtml(value.href)}">${titled}</a>` : `<g>${titled}</g>`;
        })
        .join("");
      return `<text x="${label - 8}" y="${y + 15}" text-anchor="end" font-size="11" fill="#223">${escapeHtml(row)}</text>${cells}`;
    })
    .join("");
  return `<svg xmlns="http://www.w3.org/2000/svg" class="chart heatmap" role="img" aria-label="Score by scenario and configuration" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" ${FONT}>${header}${body}</svg>`;
}
