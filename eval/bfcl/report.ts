/**
 * Scoring and reports of BFCL runs. Each answered case is scored by BFCL's own checker in the
 * bridge (`bridge.py score`); the report groups the verdicts by model, target and category with
 * Wilson intervals, pairs each target with `direct` case by case (exact McNemar), and gives the
 * time per case (median, p95) and what the guardrails did (LLM calls, nudges, rescues). A
 * multi-turn case is scored whole (every turn's state and answers, by BFCL's `multi_turn_checker`)
 * and its time is given apart, as it takes many LLM calls. Rendered as a terminal table, Markdown
 * for docs/eval.md and an HTML page with score bars.
 */
import { writeFileSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { z } from "zod";
import { type Interval, type McNemarResult, mcnemarExact, wilsonInterval } from "../metrics/stats.ts";
import { escapeHtml, pValue, scoreWithInterval } from "../report/format.ts";
import { type ScoreBar, scoreBarChart } from "../report/svg.ts";
import { textTable } from "../report/table.ts";
import { BFCL_CATEGORIES, type BfclCase, isMultiTurnCase, LIVE_AST, NON_LIVE_AST } from "./cases.ts";
import { stepResponses } from "./multi-turn.ts";
import type { BfclRow } from "./run.ts";
import type { BfclInstall } from "./setup.ts";
import { BFCL_TARGETS } from "./targets.ts";

/** BFCL's verdict on one row. */
export interface BfclVerdict {
  key: string;
  valid: boolean;
  errorType: string | null;
}

const verdictSchema = z.object({
  key: z.string(),
  valid: z.boolean(),
  error_type: z.string().nullable().optional(),
});

/** Score `rows` with BFCL's checker (a request that failed is a failed case, not sent to it). */
export async function scoreRows(
  install: BfclInstall,
  rows: readonly BfclRow[],
  cases: ReadonlyMap<string, BfclCase>,
): Promise<Map<string, BfclVerdict>> {
  const verdicts = new Map<string, BfclVerdict>();
  const dir = await mkdtemp(join(tmpdir(), "forge-bfcl-"));
  try {
    const input = join(dir, "rows.jsonl");
    const output = join(dir, "scores.jsonl");
    const lines: string[] = [];
    for (const row of rows) {
      const item = cases.get(row.id);
      if (!item) throw new Error(`row ${row.key}: case ${row.id} is not in the loaded categories`);
      if (row.error !== null) {
        verdicts.set(row.key, { key: row.key, valid: false, errorType: "request_failed" });
        continue;
      }
      if (isMultiTurnCase(item)) {
        if (!row.turns) throw new Error(`row ${row.key}: a multi-turn row without its turns`);
        lines.push(
          JSON.stringify({
            key: row.key,
            id: row.id,
            category: row.category,
            // Per turn, per step, what BFCL's FC handler records.
            result: row.turns.map((steps) => steps.map(stepResponses)),
            possible_answer: item.possible_answer,
            initial_config: item.initial_config,
            involved_classes: item.involved_classes,
          }),
        );
        continue;
      }
      const calls = row.calls.map((call) => ({ [call.name]: call.arguments }));
      lines.push(
        JSON.stringify({
          key: row.key,
          id: row.id,
          category: row.category,
          calls,
          text: row.text,
          function: item.function,
          possible_answer: item.possible_answer,
        }),
      );
    }
    await writeFile(input, `${lines.join("\n")}\n`);
    const result = await execa(
      install.python,
      [install.bridge, "--bfcl-root", install.packageRoot, "score", "--in", input, "--out", output],
      { reject: false, all: true, env: { BFCL_PROJECT_ROOT: install.projectRoot } },
    );
    if (result.failed)
      throw new Error(`bridge score failed: ${(result.all ?? "").trim().split("\n").slice(-3).join(" ")}`);
    for (const line of (await readFile(output, "utf8")).split("\n")) {
      if (line.trim() === "") continue;
      const verdict = verdictSchema.parse(JSON.parse(line));
      verdicts.set(verdict.key, {
        key: verdict.key,
        valid: verdict.valid,
        errorType: verdict.error_type ?? null,
      });
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return verdicts;
}

/** A score of one group of rows. */
export interface GroupScore {
  passed: number;
  cases: number;
  interval: Interval;
}

/** One target of one model. */
export interface TargetReport {
  model: string;
  target: string;
  byCategory: Map<string, GroupScore>;
  nonLiveAst: GroupScore;
  liveAst: GroupScore;
  /** Single-turn cases answered (the time and call figures below are over these). */
  singleTurnCases: number;
  /** Median and 95th percentile of a single-turn case's wall time, in milliseconds. */
  medianMs: number;
  p95Ms: number;
  /** LLM calls per single-turn case. */
  llmCallsPerCase: number;
  /** The same figures over multi-turn cases (a case: all its turns and steps); null without any. */
  multiTurn: { medianMs: number; p95Ms: number; llmCallsPerCase: number } | null;
  nudges: number;
  rescues: number;
  /** Versus `direct` of the same model, on the cases both answered. */
  versusDirect: McNemarResult | null;
  errors: Map<string, number>;
}

/** The whole report. */
export interface BfclReport {
  targets: TargetReport[];
  categories: string[];
}

function score(passed: number, cases: number): GroupScore {
  return { passed, cases, interval: wilsonInterval(passed, cases) };
}

function percentile(values: readonly number[], fraction: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] as number;
}

function callsPerCase(rows: readonly BfclRow[]): number {
  return rows.length === 0 ? 0 : rows.reduce((sum, row) => sum + row.llmCalls, 0) / rows.length;
}

/** Group scored rows into a report. */
export function buildReport(
  rows: readonly BfclRow[],
  verdicts: ReadonlyMap<string, BfclVerdict>,
): BfclReport {
  const groups = new Map<string, BfclRow[]>();
  for (const row of rows) {
    const key = `${row.model}|${row.target}`;
    groups.set(key, [...(groups.get(key) ?? []), row]);
  }
  const valid = (row: BfclRow) => verdicts.get(row.key)?.valid === true;
  const categories = BFCL_CATEGORIES.filter((category) => rows.some((row) => row.category === category));
  const targets: TargetReport[] = [];
  for (const [, members] of groups) {
    const first = members[0] as BfclRow;
    const byCategory = new Map<string, GroupScore>();
    for (const category of categories) {
      const inCategory = members.filter((row) => row.category === category);
      if (inCategory.length > 0)
        byCategory.set(category, score(inCategory.filter(valid).length, inCategory.length));
    }
    const within = (set: readonly string[]) => members.filter((row) => set.includes(row.category));
    const direct = new Map(
      rows.filter((row) => row.model === first.model && row.target === "direct").map((row) => [row.id, row]),
    );
    let onlyTarget = 0;
    let onlyDirect = 0;
    for (const row of members) {
      const paired = direct.get(row.id);
      if (!paired || first.target === "direct") continue;
      if (valid(row) && !valid(paired)) onlyTarget += 1;
      if (!valid(row) && valid(paired)) onlyDirect += 1;
    }
    const errors = new Map<string, number>();
    for (const row of members) {
      const type = verdicts.get(row.key)?.errorType;
      if (type) errors.set(type, (errors.get(type) ?? 0) + 1);
    }
    const single = members.filter((row) => row.turns === undefined);
    const multi = members.filter((row) => row.turns !== undefined);
    const times = single.map((row) => row.ms);
    targets.push({
      model: first.model,
      target: first.target,
      byCategory,
      nonLiveAst: score(within(NON_LIVE_AST).filter(valid).length, within(NON_LIVE_AST).length),
      liveAst: score(within(LIVE_AST).filter(valid).length, within(LIVE_AST).length),
      singleTurnCases: single.length,
      medianMs: percentile(times, 0.5),
      p95Ms: percentile(times, 0.95),
      llmCallsPerCase: callsPerCase(single),
      multiTurn:
        multi.length === 0
          ? null
          : {
              medianMs: percentile(
                multi.map((row) => row.ms),
                0.5,
              ),
              p95Ms: percentile(
                multi.map((row) => row.ms),
                0.95,
              ),
              llmCallsPerCase: callsPerCase(multi),
            },
      nudges: members.reduce((sum, row) => sum + row.nudges, 0),
      rescues: members.reduce((sum, row) => sum + row.rescues, 0),
      versusDirect:
        first.target === "direct" || direct.size === 0 ? null : mcnemarExact(onlyTarget, onlyDirect),
      errors,
    });
  }
  // Targets in the order the harness names them; a target it no longer has goes last.
  const rank = (target: string) => {
    const index = (BFCL_TARGETS as readonly string[]).indexOf(target);
    return index === -1 ? BFCL_TARGETS.length : index;
  };
  targets.sort((a, b) => a.model.localeCompare(b.model) || rank(a.target) - rank(b.target));
  return { targets, categories };
}

function cell(group: GroupScore | undefined): string {
  return group && group.cases > 0
    ? `${scoreWithInterval(group.interval)} (${group.passed}/${group.cases})`
    : "–";
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function tableOf(report: BfclReport): { header: string[]; rows: string[][] } {
  const header = [
    "model",
    "target",
    ...report.categories,
    "non-live AST",
    "live AST",
    "median",
    "p95",
    "LLM calls/case",
    "multi-turn median / p95",
    "multi-turn LLM calls/case",
    "vs direct",
  ];
  const rows = report.targets.map((target) => [
    target.model,
    target.target,
    ...report.categories.map((category) => cell(target.byCategory.get(category))),
    cell(target.nonLiveAst),
    cell(target.liveAst),
    target.singleTurnCases > 0 ? seconds(target.medianMs) : "–",
    target.singleTurnCases > 0 ? seconds(target.p95Ms) : "–",
    target.singleTurnCases > 0 ? target.llmCallsPerCase.toFixed(2) : "–",
    target.multiTurn ? `${seconds(target.multiTurn.medianMs)} / ${seconds(target.multiTurn.p95Ms)}` : "–",
    target.multiTurn ? target.multiTurn.llmCallsPerCase.toFixed(2) : "–",
    target.versusDirect
      ? `+${target.versusDirect.onlyFirst} / −${target.versusDirect.onlySecond}, ${pValue(target.versusDirect.pValue)}`
      : "–",
  ]);
  return { header, rows };
}

/** The report as a terminal table. */
export function renderBfclTerminal(report: BfclReport): string {
  const { header, rows } = tableOf(report);
  return textTable(header, rows);
}

/** The report as Markdown (a table per model: categories down, targets across). */
export function renderBfclMarkdown(report: BfclReport): string {
  const models = [...new Set(report.targets.map((target) => target.model))];
  const out: string[] = [];
  for (const model of models) {
    const targets = report.targets.filter((target) => target.model === model);
    out.push(`#### ${model}`, "");
    out.push(`| category | ${targets.map((target) => target.target).join(" | ")} |`);
    out.push(`| --- | ${targets.map(() => "---").join(" | ")} |`);
    for (const category of report.categories) {
      out.push(
        `| ${category} | ${targets.map((target) => cell(target.byCategory.get(category))).join(" | ")} |`,
      );
    }
    // The single-turn lines only where single-turn cases were run (a multi-turn run has none).
    if (targets.some((target) => target.singleTurnCases > 0)) {
      out.push(
        `| **non-live AST** | ${targets.map((target) => `**${cell(target.nonLiveAst)}**`).join(" | ")} |`,
      );
      out.push(`| live AST | ${targets.map((target) => cell(target.liveAst)).join(" | ")} |`);
      out.push(
        `| median / p95 per case | ${targets.map((target) => (target.singleTurnCases > 0 ? `${seconds(target.medianMs)} / ${seconds(target.p95Ms)}` : "–")).join(" | ")} |`,
      );
      out.push(
        `| LLM calls per case | ${targets.map((target) => (target.singleTurnCases > 0 ? target.llmCallsPerCase.toFixed(2) : "–")).join(" | ")} |`,
      );
    }
    if (targets.some((target) => target.multiTurn)) {
      out.push(
        `| multi-turn: median / p95 per case | ${targets.map((target) => (target.multiTurn ? `${seconds(target.multiTurn.medianMs)} / ${seconds(target.multiTurn.p95Ms)}` : "–")).join(" | ")} |`,
      );
      out.push(
        `| multi-turn: LLM calls per case | ${targets.map((target) => target.multiTurn?.llmCallsPerCase.toFixed(2) ?? "–").join(" | ")} |`,
      );
    }
    out.push(
      `| nudges / rescues | ${targets.map((target) => `${target.nudges} / ${target.rescues}`).join(" | ")} |`,
    );
    out.push(
      `| vs direct (McNemar) | ${targets
        .map((target) =>
          target.versusDirect
            ? `+${target.versusDirect.onlyFirst} / −${target.versusDirect.onlySecond}, ${pValue(target.versusDirect.pValue)}`
            : "–",
        )
        .join(" | ")} |`,
    );
    out.push("");
  }
  return out.join("\n");
}

/** The report as one HTML page: score bars per category and the table. */
export function renderBfclHtml(report: BfclReport, title = "BFCL through forge-guardrails"): string {
  const bars: ScoreBar[] = [];
  for (const category of [...report.categories, "non-live AST"]) {
    for (const target of report.targets) {
      const group = category === "non-live AST" ? target.nonLiveAst : target.byCategory.get(category);
      if (group && group.cases > 0)
        bars.push({ name: `${category} · ${target.target}`, score: group.interval, note: `${target.model}` });
    }
  }
  const { header, rows } = tableOf(report);
  const table = `<table><thead><tr>${header.map((name) => `<th>${escapeHtml(name)}</th>`).join("")}</tr></thead><tbody>${rows
    .map((row) => `<tr>${row.map((value) => `<td>${escapeHtml(value)}</td>`).join("")}</tr>`)
    .join("")}</tbody></table>`;
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title><style>
body{font-family:system-ui,sans-serif;margin:24px;color:#223}table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #d9dde3;padding:4px 8px;text-align:left}th{background:#f3f5f8}
</style></head><body><h1>${escapeHtml(title)}</h1><p>Scored by BFCL's own checker (bfcl-eval: AST and relevance rules; multi-turn cases by its multi-turn checker on its simulated APIs). Whiskers: 95% Wilson intervals.</p>${scoreBarChart(bars, 900)}<h2>Table</h2>${table}</body></html>`;
}

/** Write the HTML page. */
export function writeBfclHtml(path: string, report: BfclReport): void {
  writeFileSync(path, renderBfclHtml(report));
}
