/**
 * Read a batch's JSONL (and its traces) and write the reports: the dashboard with its timeline
 * pages, and the Markdown report.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { type LineProblem, latestByKey, readJsonl } from "../batch/jsonl.ts";
import { type RunRow, runRowSchema } from "../batch/row.ts";
import { buildReport, type ReportData } from "../metrics/aggregate.ts";
import type { RunTrace } from "../run/types.ts";
import { renderDashboard, representativeRow, timelineFileName } from "./html.ts";
import { renderTimeline } from "./timeline.ts";

/** Rows selected for a report, and what could not be read. */
export interface LoadedRows {
  rows: RunRow[];
  problems: (LineProblem & { file: string })[];
  superseded: number;
}

/** Filters of a report. */
export interface RowFilter {
  configs?: readonly string[];
  tags?: readonly string[];
  scenarios?: readonly string[];
}

/** Read JSONL files (each corrupt line reported with its number), keep the newest row per key, filter. */
export function loadRows(files: readonly string[], filter: RowFilter = {}): LoadedRows {
  const all: RunRow[] = [];
  const problems: LoadedRows["problems"] = [];
  for (const file of files) {
    const content = readJsonl(file, runRowSchema);
    all.push(...content.rows);
    problems.push(...content.problems.map((problem) => ({ ...problem, file })));
  }
  const latest = latestByKey(all);
  const rows = latest.rows.filter(
    (row) =>
      (!filter.configs?.length ||
        filter.configs.includes(row.configLabel) ||
        filter.configs.includes(row.config.name)) &&
      (!filter.tags?.length || filter.tags.some((tag) => row.tags.includes(tag))) &&
      (!filter.scenarios?.length || filter.scenarios.includes(row.scenario)),
  );
  return { rows, problems, superseded: latest.superseded };
}

/** Read the traces of the given keys from a traces JSONL (newest per key). */
export function readTraces(file: string, keys?: ReadonlySet<string>): Map<string, RunTrace> {
  const traces = new Map<string, RunTrace>();
  if (!existsSync(file)) return traces;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (line.trim() === "") continue;
    // Cheap pre-filter: the key is the first field written.
    const keyMatch = /^\{"key":"((?:[^"\\]|\\.)*)"/.exec(line);
    if (keys && keyMatch && !keys.has(JSON.parse(`"${keyMatch[1]}"`))) continue;
    try {
      const trace = JSON.parse(line) as RunTrace;
      if (!keys || keys.has(trace.key)) traces.set(trace.key, trace);
    } catch {
      // An interrupted trace line: the run has no row either, or is reported without a timeline.
    }
  }
  return traces;
}

/** The traces file of a rows file (`x.jsonl` → `x.traces.jsonl`). */
export function tracesPathFor(rowsFile: string): string {
  return `${rowsFile.replace(/\.jsonl$/, "")}.traces.jsonl`;
}

/** Options of `writeHtmlReport`. */
export interface HtmlReportOptions {
  outDir: string;
  /** Which runs get a timeline page: one per heat-map cell, every run, or none. */
  timelines?: "cells" | "all" | "none";
  tracesFiles?: readonly string[];
  title?: string;
  command?: string;
  source?: string;
}

/** Write `index.html` and `runs/*.html`; returns the dashboard's path and the number of timelines. */
export function writeHtmlReport(
  report: ReportData,
  options: HtmlReportOptions,
): { dashboard: string; timelines: number } {
  mkdirSync(join(options.outDir, "runs"), { recursive: true });
  const mode = options.timelines ?? "cells";
  const wanted = new Map<string, RunRow>();
  if (mode !== "none") {
    for (const group of report.groups) {
      if (mode === "all") for (const row of group.rows) wanted.set(row.key, row);
      else {
        for (const scenario of report.scenarios) {
          const row = representativeRow(group, scenario);
          if (row) wanted.set(row.key, row);
        }
      }
    }
  }
  const traces = new Map<string, RunTrace>();
  if (wanted.size > 0) {
    for (const file of options.tracesFiles ?? []) {
      for (const [key, trace] of readTraces(file, new Set(wanted.keys()))) traces.set(key, trace);
    }
  }
  for (const [key, trace] of traces) {
    writeFileSync(
      join(options.outDir, "runs", timelineFileName(key)),
      renderTimeline(trace, wanted.get(key) ?? null, { backHref: "../index.html" }),
    );
  }
  const dashboard = join(options.outDir, "index.html");
  writeFileSync(
    dashboard,
    renderDashboard(report, {
      ...(options.title && { title: options.title }),
      ...(options.command && { command: options.command }),
      ...(options.source && { source: options.source }),
      timelineHref: (group, scenario) => {
        const row = representativeRow(group, scenario);
        return row && traces.has(row.key) ? `runs/${timelineFileName(row.key)}` : undefined;
      },
    }),
  );
  return { dashboard, timelines: traces.size };
}

/** Build the report data of loaded rows. */
export function reportOf(rows: readonly RunRow[], baseline?: string): ReportData {
  return buildReport(rows, baseline);
}

/** Write text to a file, creating its folder. */
export function writeText(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}
