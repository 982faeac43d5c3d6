/**
 * The Markdown report: the summary, the ablation deltas, failure kinds and the per-scenario
 * matrix, as GitHub-flavoured tables.
 */
import { describeSettings } from "../batch/backend-settings.ts";
import type { RunRow } from "../batch/row.ts";
import type { ReportData } from "../metrics/aggregate.ts";
import { IDEAL_COST_TARGET } from "../metrics/ideal-cost.ts";
import { delta, percent, pValue } from "./format.ts";
import { presetLines, scenarioRows, summaryRows } from "./table.ts";

/** Options of `renderMarkdown`. */
export interface MarkdownOptions {
  title?: string;
  /** The command that produced the data, shown verbatim. */
  command?: string;
  /** Heading level of the title (default 2, for embedding in a document). */
  level?: number;
}

function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const escapeCell = (cell: string) => cell.replace(/\|/g, "\\|");
  return [
    `| ${header.map(escapeCell).join(" | ")} |`,
    `| ${header.map((_, index) => (index === 0 ? "---" : "---:")).join(" | ")} |`,
    ...rows.map((row) => `| ${row.map(escapeCell).join(" | ")} |`),
  ].join("\n");
}

/** Failure kinds per configuration. */
export function failureRows(report: ReportData): { header: string[]; rows: string[][] } {
  const kinds = [
    ...new Set(
      report.groups.flatMap((group) =>
        group.rows.map((row) => failureKindOf(row)).filter((kind) => kind !== null),
      ),
    ),
  ].sort() as string[];
  return {
    header: ["config", ...kinds],
    rows: report.groups.map((group) => [
      group.name,
      ...kinds.map((kind) => String(group.rows.filter((row) => failureKindOf(row) === kind).length)),
    ]),
  };
}

/** Completed runs' evaluated tokens against the ideal reference, per config; no rows without an ideal. */
export function idealCostRows(report: ReportData): { header: string[]; rows: string[][] } {
  return {
    header: [
      "config",
      "completed runs",
      "eval. tokens",
      "ideal tokens",
      "× ideal (mean)",
      "× ideal (median)",
      `runs ≤ ${IDEAL_COST_TARGET}×`,
    ],
    rows: report.groups.flatMap((group) => {
      const cost = group.idealCost;
      if (!cost) return [];
      return [
        [
          group.name,
          String(cost.runs),
          String(Math.round(cost.meanEvaluatedTokens)),
          String(Math.round(cost.meanIdealTokens)),
          `${cost.meanRatio.toFixed(2)}×`,
          `${cost.medianRatio.toFixed(2)}×`,
          `${cost.withinTarget} (${percent(cost.withinTarget / cost.runs)})`,
        ],
      ];
    }),
  };
}

/** Why a run did not score: its failure kind, or wrong answer / wrong state; null when correct. */
export function failureKindOf(row: RunRow): string | null {
  if (row.accurate) return null;
  if (!row.completed) return row.failureKind ?? "incomplete";
  return row.answerProblem ? "wrong_answer" : "wrong_state";
}

/** The backend settings of the real (not simulated) rows that record them, one line; none when no row does. */
export function settingsLines(rows: readonly RunRow[]): string[] {
  const described = new Set(
    rows.flatMap((row) => (row.settings && !row.simulated ? [describeSettings(row.settings)] : [])),
  );
  if (described.size === 0) return [];
  return ["", `Backend settings: ${[...described].join(" | ")}.`];
}

/** Render the report as Markdown. */
export function renderMarkdown(report: ReportData, options: MarkdownOptions = {}): string {
  const hashes = "#".repeat(options.level ?? 2);
  const summary = summaryRows(report);
  const failures = failureRows(report);
  const scenarios = scenarioRows(report);
  const rows = report.groups.flatMap((group) => group.rows);
  const first = rows[0];
  const simulated = rows.some((row) => row.simulated);
  const targets = [
    ...new Set(
      rows.map(
        (row) =>
          `\`${row.backend}\` \`${row.model}\`${row.profile ? ` (profile \`${row.profile}\`)` : ""}${row.simulated ? " — **simulated**" : ""}`,
      ),
    ),
  ];
  const lines = [
    `${hashes} ${options.title ?? "Eval report"}`,
    "",
    ...(options.command ? ["Produced by:", "", "```sh", options.command, "```", ""] : []),
    first && targets.length > 1
      ? `Targets: ${targets.join("; ")}; ${rows.length} runs over ${report.scenarios.length} scenarios; forge-guardrails ${first.versions.forgeGuardrails}${first.versions.commit ? ` (${first.versions.commit})` : ""}, ai ${first.versions.ai ?? "–"}, node ${first.versions.node}. Each config is compared with the baseline config of its own model.`
      : first
        ? `Backend \`${first.backend}\`, model \`${first.model}\`${first.profile ? `, profile \`${first.profile}\`` : ""}${simulated ? " — **simulated** (sim-model rows)" : ""}; ${rows.length} runs over ${report.scenarios.length} scenarios; forge-guardrails ${first.versions.forgeGuardrails}${first.versions.commit ? ` (${first.versions.commit})` : ""}, ai ${first.versions.ai ?? "–"}, node ${first.versions.node}.`
        : "",
    ...settingsLines(rows),
    "",
    markdownTable(summary.header, summary.rows),
    "",
    "Configs:",
    "",
    ...presetLines(report).map((line) => `- ${line}`),
    "",
    "Score = correct / runs (95% Wilson interval). Overflow = runs whose prompt outgrew the context (`context_exceeded`: their own outcome, not errors); errors = backend or harness failures. Nudges r/u/s/p = retry / unknown tool / step / prerequisite. Δ vs base = score difference against the baseline on the same (scenario, run) pairs, exact McNemar test.",
    "",
    `${hashes}# Ablation deltas vs ${targets.length > 1 ? "each model's baseline" : (report.baseline?.name ?? "baseline")}`,
    "",
    markdownTable(
      ["config", "paired runs", "Δ score", "only baseline right", "only config right", "McNemar"],
      report.comparisons.map((comparison) => [
        comparison.group,
        String(comparison.pairs),
        delta(comparison.delta),
        String(comparison.test.onlyFirst),
        String(comparison.test.onlySecond),
        pValue(comparison.test.pValue),
      ]),
    ),
    "",
    ...idealCostSection(report, hashes),
    `${hashes}# Why runs did not score`,
    "",
    markdownTable(failures.header, failures.rows),
    "",
    `${hashes}# Score by scenario`,
    "",
    markdownTable(scenarios.header, scenarios.rows),
    "",
  ];
  return lines.join("\n");
}

function idealCostSection(report: ReportData, hashes: string): string[] {
  const cost = idealCostRows(report);
  if (cost.rows.length === 0) return [];
  return [
    `${hashes}# Token cost against the ideal reference`,
    "",
    `Each completed run's evaluated tokens (its first prompt in full, later prompts less prompt-cache hits, generated tokens) divided by the ideal reference's on the same scenario, backend, model and tool mode (${report.idealRows.length} ideal runs: the reference calls played through the loop, each prompt evaluated by the backend). Target: at most ${IDEAL_COST_TARGET}×.`,
    "",
    markdownTable(cost.header, cost.rows),
    "",
  ];
}

export { percent };
