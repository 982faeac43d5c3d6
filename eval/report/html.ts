/**
 * The self-contained HTML dashboard: summary table, score chart, ablation deltas, failure
 * kinds and the per-scenario heat map whose cells open run timelines. Inline CSS and SVG only,
 * no scripts and nothing fetched, so it renders offline.
 */
import type { ConfigGroup, ReportData } from "../metrics/aggregate.ts";
import { escapeHtml, percent, slug } from "./format.ts";
import { failureKindOf, failureRows } from "./markdown.ts";
import { deltaChart, heatMap, scoreBarChart } from "./svg.ts";
import { presetLines, summaryRows } from "./table.ts";

/** Styles shared by the dashboard and the timeline pages. */
export const PAGE_CSS = `
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d2330;background:#f6f7f9}
main{max-width:1180px;margin:0 auto;padding:24px}h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 10px}
.meta{color:#556;font-size:13px}.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600}
.sim{background:#fff1c9;color:#7a5600}.ok{background:#d8f3e0;color:#1e6b38}.bad{background:#fbe0dd;color:#9b2a1d}
section{background:#fff;border:1px solid #e3e6ea;border-radius:8px;padding:16px;margin:16px 0;overflow-x:auto}
table{border-collapse:collapse;font-size:12.5px;width:100%}th,td{padding:5px 8px;border-bottom:1px solid #eceef1;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}th{background:#f3f5f7;font-weight:600}
.note{color:#667;font-size:12px;margin-top:8px}a{color:#1f5fbf}
.event{display:grid;grid-template-columns:70px 150px 1fr;gap:8px;padding:6px 8px;border-bottom:1px solid #eef0f2;align-items:start}
.event pre{margin:0;white-space:pre-wrap;word-break:break-word;font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}
.kind{font-size:12px;font-weight:600;border-radius:4px;padding:1px 6px;justify-self:start}
.t{color:#889;font-size:12px;text-align:right}
.k-system_prompt,.k-user_input{background:#e8eefc;color:#234}.k-tool_call{background:#e7f6ec;color:#1d5b31}
.k-tool_result{background:#f1f3f5;color:#334}.k-retry_nudge,.k-step_nudge,.k-prerequisite_nudge{background:#fdecc8;color:#7a4b00}
.k-text_response{background:#fbe0dd;color:#8a2418}.k-reasoning{background:#efe6fb;color:#4b2a7a}.k-summary{background:#e0f4f7;color:#0f5563}
.k-compaction{background:#d7ecff;color:#0b4a85}.k-state{background:#eef0f3;color:#445}.k-llm{background:#fff;border:1px solid #ccd;color:#334}
details summary{cursor:pointer;color:#1f5fbf}
`;

/** Options of `renderDashboard`. */
export interface DashboardOptions {
  title?: string;
  source?: string;
  command?: string;
  /** The run whose timeline a heat-map cell links to, by group key and scenario. */
  timelineHref?: (group: ConfigGroup, scenario: string) => string | undefined;
}

/** The representative run of a cell: its first failing run, else its first run. */
export function representativeRow(group: ConfigGroup, scenario: string) {
  const rows = group.rows.filter((row) => row.scenario === scenario).sort((a, b) => a.runIndex - b.runIndex);
  return rows.find((row) => !row.accurate) ?? rows[0];
}

/** The file name of a run's timeline page. */
export function timelineFileName(key: string): string {
  return `${slug(key)}.html`;
}

function htmlTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return `<table><thead><tr>${header.map((cell) => `<th>${escapeHtml(cell)}</th>`).join("")}</tr></thead><tbody>${rows
    .map((row) => `<tr>${row.map((cell) => `<td>${escapeHtml(cell)}</td>`).join("")}</tr>`)
    .join("")}</tbody></table>`;
}

/** Render the dashboard page. */
export function renderDashboard(report: ReportData, options: DashboardOptions = {}): string {
  const rows = report.groups.flatMap((group) => group.rows);
  const first = rows[0];
  const simulated = rows.some((row) => row.simulated);
  const summary = summaryRows(report);
  const failures = failureRows(report);
  const scores = scoreBarChart(
    report.groups.map((group) => ({
      name: group.name,
      score: group.metrics.score,
      note: `${group.metrics.correct}/${group.metrics.runs} correct`,
    })),
  );
  const deltas = deltaChart(
    report.comparisons.map((comparison) => ({
      name: comparison.group,
      delta: comparison.delta,
      pValue: comparison.test.pValue,
    })),
    report.baseline?.name ?? "baseline",
  );
  const heat = heatMap(
    report.scenarios,
    report.groups.map((group) => group.name),
    (scenario, column) => {
      const group = report.groups.find((candidate) => candidate.name === column) as ConfigGroup;
      const metrics = group.byScenario.get(scenario);
      const representative = representativeRow(group, scenario);
      const why =
        representative && !representative.accurate
          ? ` — e.g. run ${representative.runIndex}: ${failureKindOf(representative)}`
          : "";
      const href = options.timelineHref?.(group, scenario);
      return {
        score: metrics ? metrics.score.estimate : null,
        title: metrics
          ? `${scenario} × ${column}: ${metrics.correct}/${metrics.runs} correct${why}`
          : `${scenario} × ${column}: no runs`,
        ...(href && { href }),
      };
    },
  );
  const title = options.title ?? "forge-guardrails eval";
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title><style>${PAGE_CSS}</style></head>
<body><main>
<h1>${escapeHtml(title)} ${simulated ? '<span class="badge sim">simulated</span>' : ""}</h1>
<div class="meta">${
    first
      ? `backend <b>${escapeHtml(first.backend)}</b> · model <b>${escapeHtml(first.model)}</b>${first.profile ? ` · profile <b>${escapeHtml(first.profile)}</b>` : ""} · ${rows.length} runs · ${report.scenarios.length} scenarios · ${report.groups.length} configs · forge-guardrails ${escapeHtml(first.versions.forgeGuardrails)}${first.versions.commit ? ` (${escapeHtml(first.versions.commit)})` : ""} · ai ${escapeHtml(first.versions.ai ?? "–")} · node ${escapeHtml(first.versions.node)}`
      : "no rows"
  }${options.source ? ` · ${escapeHtml(options.source)}` : ""}</div>
${options.command ? `<div class="meta">command: <code>${escapeHtml(options.command)}</code></div>` : ""}
<section><h2>Score by configuration</h2>${scores}<div class="note">Score = correct / runs; whiskers are 95% Wilson intervals.</div></section>
<section><h2>Ablation deltas vs ${escapeHtml(report.baseline?.name ?? "baseline")}</h2>${deltas}<div class="note">Score difference on the same (scenario, run) pairs; darker bars are significant (exact McNemar p &lt; 0.05).</div></section>
<section><h2>Per-scenario heat map</h2>${heat}<div class="note">Each cell links to the timeline of its first failing run (or its first run).</div></section>
<section><h2>Summary</h2>${htmlTable(summary.header, summary.rows)}<div class="note">overflow = prompt outgrew the context (context_exceeded, its own outcome); errors = backend or harness failures; nudges r/u/s/p = retry / unknown tool / step / prerequisite.</div><div class="note">Configs: ${presetLines(report).map(escapeHtml).join(" · ")}</div></section>
<section><h2>Why runs did not score</h2>${htmlTable(failures.header, failures.rows)}</section>
<section><h2>Scenarios</h2>${htmlTable(
    ["scenario", "runs", "best config", "best score", "worst config", "worst score"],
    report.scenarios.map((scenario) => {
      const ranked = report.groups
        .map((group) => ({ group, metrics: group.byScenario.get(scenario) }))
        .filter((entry) => entry.metrics !== undefined)
        .sort((a, b) => (b.metrics?.score.estimate ?? 0) - (a.metrics?.score.estimate ?? 0));
      const best = ranked[0];
      const worst = ranked.at(-1);
      return [
        scenario,
        String(ranked.reduce((sum, entry) => sum + (entry.metrics?.runs ?? 0), 0)),
        best?.group.name ?? "–",
        percent(best?.metrics?.score.estimate ?? null),
        worst?.group.name ?? "–",
        percent(worst?.metrics?.score.estimate ?? null),
      ];
    }),
  )}</section>
</main></body></html>
`;
}

export { slug };
