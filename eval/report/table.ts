/**
 * The terminal report: a summary table per configuration, the paired comparisons, and a
 * per-scenario score matrix.
 */
import type { ReportData } from "../metrics/aggregate.ts";
import { ANTHROPIC_PRICES_AS_OF } from "../metrics/prices.ts";
import { delta, duration, fixed, percent, pValue, scoreWithInterval } from "./format.ts";

/** Lay out rows of cells as an aligned text table with a header rule. */
export function textTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((cell, index) =>
    Math.max(cell.length, ...rows.map((row) => (row[index] ?? "").length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, index) =>
        index === 0 ? cell.padEnd(widths[index] ?? 0) : cell.padStart(widths[index] ?? 0),
      )
      .join("  ");
  return [line(header), widths.map((width) => "─".repeat(width)).join("  "), ...rows.map(line)].join("\n");
}

/** The summary rows shared by the terminal and Markdown reports. */
export function summaryRows(report: ReportData): { header: string[]; rows: string[][] } {
  const header = [
    "config",
    "runs",
    "score [95% CI]",
    "complete",
    "overflow",
    "errors",
    "accuracy",
    "effic.",
    "wasted",
    "nudges r/u/s/p",
    "rescues",
    "tool err",
    "compact",
    "phase",
    "tokens",
    "cost",
    "time",
    "eval. tok/done",
    "time/done",
    "×ideal",
    "Δ vs base",
  ];
  const rows = report.groups.map((group) => {
    const m = group.metrics;
    const comparison = report.comparisons.find((candidate) => candidate.group === group.name);
    return [
      `${group.name}${m.simulated ? " (simulated)" : ""}`,
      String(m.runs),
      scoreWithInterval(m.score),
      percent(m.completeness),
      String(m.overflows),
      String(m.errors),
      percent(m.accuracy),
      fixed(m.efficiency),
      fixed(m.wastedCalls, 1),
      `${m.nudges.retry}/${m.nudges.unknown_tool}/${m.nudges.step}/${m.nudges.prerequisite}`,
      String(m.rescues),
      String(m.toolErrors),
      String(m.compactedRuns),
      String(m.maxPhase),
      `${Math.round(m.meanInputTokens)}${m.tokenSource === "backend" ? "" : m.tokenSource === "estimate" ? " est." : " mixed"}`,
      m.costUsd === null ? "–" : `$${m.costUsd.toFixed(4)}`,
      duration(m.meanWallMs),
      m.meanEvaluatedTokensDone === null ? "–" : String(Math.round(m.meanEvaluatedTokensDone)),
      m.meanWallMsDone === null ? "–" : duration(m.meanWallMsDone),
      group.idealCost ? `${group.idealCost.meanRatio.toFixed(2)}×` : "–",
      comparison ? `${delta(comparison.delta)} ${pValue(comparison.test.pValue)}` : "baseline",
    ];
  });
  return { header, rows };
}

/** The scenario × config score matrix. */
export function scenarioRows(report: ReportData): { header: string[]; rows: string[][] } {
  return {
    header: ["scenario", ...report.groups.map((group) => group.name)],
    rows: report.scenarios.map((scenario) => [
      scenario,
      ...report.groups.map((group) => {
        const metrics = group.byScenario.get(scenario);
        return metrics ? percent(metrics.score.estimate) : "–";
      }),
    ]),
  };
}

/**
 * What each config of the report runs with, one line each: the preset's guardrail settings as
 * the rows record them (the AI SDK peer: its own loop).
 * @example presetLines(report) // ["reforged: rescue on, retries 3, step enforcement on, tool errors 2, compaction tiered"]
 */
export function presetLines(report: ReportData): string[] {
  const lines = new Map<string, string>();
  for (const group of report.groups) {
    const config = group.rows[0]?.config;
    if (!config || lines.has(group.configLabel)) continue;
    lines.set(
      group.configLabel,
      config.loop === "ai_sdk"
        ? `${group.configLabel}: Vercel AI SDK generateText + stopWhen (no rescue, nudges, step enforcement or compaction)`
        : `${group.configLabel}: rescue ${onOff(config.rescueEnabled)}, retries ${config.maxRetriesPerStep}, step enforcement ${onOff(config.stepEnforcement)}, tool errors ${config.maxToolErrors ?? "unbounded"}, compaction ${config.compaction}`,
    );
  }
  return [...lines.values()];
}

function onOff(value: boolean): string {
  return value ? "on" : "off";
}

/** The full terminal report. */
export function renderTerminalReport(report: ReportData): string {
  if (report.groups.length === 0) return "No rows.";
  const summary = summaryRows(report);
  const scenarios = scenarioRows(report);
  return [
    textTable(summary.header, summary.rows),
    "",
    `overflow = prompt outgrew the context (context_exceeded, its own outcome); errors = backend or harness failures; tokens = mean prompt tokens per run as the backend counted them (est. = chars/4 estimate where it reported none); eval. tok/done = tokens the backend evaluated per completed run (first prompt in full, later prompts less prompt-cache hits, generated tokens); time/done = wall time per completed run; ×ideal = mean of eval. tokens / the ideal reference's (--ideal) over completed runs; cost = total USD (Anthropic, ${ANTHROPIC_PRICES_AS_OF} prices); nudges r/u/s/p = retry / unknown tool / step / prerequisite; Δ = score difference vs the baseline on paired runs, exact McNemar p.`,
    "",
    "Configs:",
    ...presetLines(report).map((line) => `  ${line}`),
    "",
    textTable(scenarios.header, scenarios.rows),
  ].join("\n");
}
