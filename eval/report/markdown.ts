/**
 * The Markdown report: the summary, the ablation deltas, failure kinds and the per-scenario
 * matrix, as GitHub-flavoured tables.
 */
import { describeSettings } from "../batch/backend-settings.ts";
import type { RunRow } from "../batch/row.ts";
import type { ReportData } from "../metrics/aggregate.ts";
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

export { percent };
