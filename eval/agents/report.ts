/**
 * The agent suite's report: per model, agent and arm the tasks passed (95 % Wilson interval), the
 * pairing with the direct arm task by task (exact McNemar), turns, wall time and the guardrail
 * events the proxy logged; and a task-by-task grid. Rendered as a terminal table, Markdown for
 * docs/agents.md and an HTML page with score bars, with the eval harness's helpers.
 */
import { writeFileSync } from "node:fs";
import { type Interval, type McNemarResult, mcnemarExact, wilsonInterval } from "../metrics/stats.ts";
import { escapeHtml, pValue, scoreWithInterval } from "../report/format.ts";
import { type ScoreBar, scoreBarChart } from "../report/svg.ts";
import { textTable } from "../report/table.ts";
import type { AgentRow } from "./run.ts";

/** One model, agent and arm. */
export interface ArmSummary {
  model: string;
  agent: string;
  arm: string;
  passed: number;
  runs: number;
  interval: Interval;
  turnsPerRun: number;
  backendCallsPerRun: number;
  medianMs: number;
  timeouts: number;
  events: {
    loops: number;
    denied: number;
    renamed: number;
    prose: number;
    nudges: number;
    rescues: number;
    degenerate: number;
    proxyErrors: number;
  };
  /** Versus the direct arm of the same model and agent, task by task. */
  versusDirect: McNemarResult | null;
}

/** The whole report. */
export interface AgentReport {
  arms: ArmSummary[];
  /** Task ids in first-seen order. */
  tasks: string[];
  rows: readonly AgentRow[];
}

function median(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

const sum = (rows: readonly AgentRow[], pick: (row: AgentRow) => number) =>
  rows.reduce((total, row) => total + pick(row), 0);

/** Group `rows` (the latest per key) into a report. */
export function buildAgentReport(rows: readonly AgentRow[]): AgentReport {
  const groups = new Map<string, AgentRow[]>();
  for (const row of rows) {
    const key = `${row.model}|${row.agent}|${row.arm}`;
    groups.set(key, [...(groups.get(key) ?? []), row]);
  }
  const arms: ArmSummary[] = [];
  for (const members of groups.values()) {
    const first = members[0] as AgentRow;
    const passed = members.filter((row) => row.passed).length;
    let versusDirect: McNemarResult | null = null;
    if (first.arm !== "direct") {
      const direct = new Map(
        rows
          .filter((row) => row.model === first.model && row.agent === first.agent && row.arm === "direct")
          .map((row) => [row.key.replace("|direct|", "|"), row]),
      );
      let onlyThis = 0;
      let onlyDirect = 0;
      let paired = 0;
      for (const row of members) {
        const other = direct.get(row.key.replace(`|${row.arm}|`, "|"));
        if (!other) continue;
        paired += 1;
        if (row.passed && !other.passed) onlyThis += 1;
        if (!row.passed && other.passed) onlyDirect += 1;
      }
      if (paired > 0) versusDirect = mcnemarExact(onlyThis, onlyDirect);
    }
    arms.push({
      model: first.model,
      agent: first.agent,
      arm: first.arm,
      passed,
      runs: members.length,
      interval: wilsonInterval(passed, members.length),
      turnsPerRun: sum(members, (row) => row.turns) / members.length,
      backendCallsPerRun: sum(members, (row) => row.backendCalls) / members.length,
      medianMs: median(members.map((row) => row.wallMs)),
      timeouts: members.filter((row) => row.exitReason === "timeout").length,
      events: {
        loops: sum(members, (row) => row.loopNotes + row.loopNarrows + row.loopStops),
        denied: sum(members, (row) => row.denied),
        renamed: sum(members, (row) => row.renamed),
        prose: sum(members, (row) => row.prose),
        nudges: sum(members, (row) => row.nudges),
        rescues: sum(members, (row) => row.rescues),
        degenerate: sum(members, (row) => row.degenerate),
        proxyErrors: sum(members, (row) => row.proxyErrors),
      },
      versusDirect,
    });
  }
  arms.sort(
    (a, b) => a.model.localeCompare(b.model) || a.agent.localeCompare(b.agent) || a.arm.localeCompare(b.arm),
  );
  const tasks = [...new Set(rows.map((row) => row.task))];
  return { arms, tasks, rows };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(0)} s`;

function eventsCell(arm: ArmSummary): string {
  const parts = Object.entries(arm.events)
    .filter(([, count]) => count > 0)
    .map(([name, count]) => `${name} ${count}`);
  return parts.length > 0 ? parts.join(", ") : "–";
}

function summaryTable(report: AgentReport): { header: string[]; rows: string[][] } {
  const header = [
    "model",
    "agent",
    "arm",
    "passed",
    "turns/run",
    "backend calls/run",
    "median wall",
    "timeouts",
    "guardrail events",
    "vs direct",
  ];
  const rows = report.arms.map((arm) => [
    arm.model,
    arm.agent,
    arm.arm,
    `${arm.passed}/${arm.runs} (${scoreWithInterval(arm.interval)})`,
    arm.turnsPerRun.toFixed(1),
    arm.backendCallsPerRun.toFixed(1),
    seconds(arm.medianMs),
    String(arm.timeouts),
    eventsCell(arm),
    arm.versusDirect
      ? `+${arm.versusDirect.onlyFirst} / −${arm.versusDirect.onlySecond}, ${pValue(arm.versusDirect.pValue)}`
      : "–",
  ]);
  return { header, rows };
}

/** A run's grid cell: ✓ / ✗, `⏱` when it hit the cap, and its turns. */
function runCell(row: AgentRow | undefined): string {
  if (!row) return "–";
  const mark = row.passed ? "✓" : "✗";
  const capped = row.exitReason === "timeout" ? " ⏱" : "";
  return `${mark}${capped} ${row.turns}t ${seconds(row.wallMs)}`;
}

function gridTable(report: AgentReport): { header: string[]; rows: string[][] } {
  const columns = report.arms.map((arm) => ({ arm, label: `${arm.model} ${arm.agent} ${arm.arm}` }));
  const header = ["task", ...columns.map((column) => column.label)];
  const rows = report.tasks.map((task) => [
    task,
    ...columns.map(({ arm }) =>
      runCell(
        report.rows.find(
          (row) =>
            row.task === task && row.model === arm.model && row.agent === arm.agent && row.arm === arm.arm,
        ),
      ),
    ),
  ]);
  return { header, rows };
}

/** The report as terminal tables. */
export function renderAgentTerminal(report: AgentReport): string {
  const summary = summaryTable(report);
  const grid = gridTable(report);
  return `${textTable(summary.header, summary.rows)}\n\n${textTable(grid.header, grid.rows)}`;
}

function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) =>
    `| ${cells.map((cell) => cell.replaceAll("|", "\\|")).join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

/** The report as Markdown: the summary table, then the task grid (✓ passed, ✗ failed, ⏱ hit the cap, t turns). */
export function renderAgentMarkdown(report: AgentReport): string {
  const summary = summaryTable(report);
  const grid = gridTable(report);
  return `${markdownTable(summary.header, summary.rows)}\n\n${markdownTable(grid.header, grid.rows)}\n`;
}

/** The report as one HTML page: score bars, the summary, the grid and each run's grader line. */
export function renderAgentHtml(
  report: AgentReport,
  title = "Agent task suite: direct vs through forge",
): string {
  const bars: ScoreBar[] = report.arms.map((arm) => ({
    name: `${arm.agent} · ${arm.arm}`,
    score: arm.interval,
    note: arm.model,
  }));
  const table = (header: readonly string[], rows: readonly (readonly string[])[]) =>
    `<table><thead><tr>${header.map((name) => `<th>${escapeHtml(name)}</th>`).join("")}</tr></thead><tbody>${rows
      .map((row) => `<tr>${row.map((value) => `<td>${escapeHtml(value)}</td>`).join("")}</tr>`)
      .join("")}</tbody></table>`;
  const summary = summaryTable(report);
  const grid = gridTable(report);
  const runs = report.rows.map((row) => [
    row.task,
    row.agent,
    row.arm,
    row.passed ? "passed" : "failed",
    row.detail,
    `${row.exitReason}${row.exitCode === null ? "" : ` ${row.exitCode}`}`,
    seconds(row.wallMs),
  ]);
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title><style>
body{font-family:system-ui,sans-serif;margin:24px;color:#223}table{border-collapse:collapse;font-size:13px;margin-bottom:24px}td,th{border:1px solid #d9dde3;padding:4px 8px;text-align:left}th{background:#f3f5f8}
</style></head><body><h1>${escapeHtml(title)}</h1><p>Each task in a fresh git repository, graded by code. Whiskers: 95% Wilson intervals.</p>${scoreBarChart(bars, 900)}<h2>Summary</h2>${table(summary.header, summary.rows)}<h2>Tasks</h2>${table(grid.header, grid.rows)}<h2>Runs</h2>${table(["task", "agent", "arm", "verdict", "grader", "exit", "wall"], runs)}</body></html>`;
}

/** Write the HTML page. */
export function writeAgentHtml(path: string, report: AgentReport): void {
  writeFileSync(path, renderAgentHtml(report));
}
