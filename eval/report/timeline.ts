/**
 * The per-run timeline page: every message, nudge, LLM exchange, compaction and statechart
 * transition of one run in time order, with a strip chart on top and the final persisted
 * snapshot at the bottom. Self-contained like the dashboard.
 */

import {
  describeMessage,
  renderTimelineEvent,
  timelineEvents,
  timelineStrip,
} from "../../src/watch/view/index.ts";
import type { RunRow } from "../batch/row.ts";
import type { RunTrace } from "../run/types.ts";
import { duration, escapeHtml } from "./format.ts";
import { PAGE_CSS } from "./html.ts";

// The renderer lives in src/watch/view (the live viewer draws the same rows); the eval's tests import it from here.
export { timelineEvents, timelineStrip };

/** Render one run's timeline page. */
export function renderTimeline(
  trace: RunTrace,
  row: RunRow | null,
  options: { backHref?: string } = {},
): string {
  const events = timelineEvents(trace);
  const totalMs = Math.max(row?.wallMs ?? 0, ...events.map((event) => event.at), 1);
  const status = row
    ? row.accurate
      ? '<span class="badge ok">correct</span>'
      : `<span class="badge bad">${escapeHtml(row.completed ? (row.answerProblem ? "wrong answer" : "wrong state") : (row.failureKind ?? "failed"))}</span>`
    : "";
  const facts = row
    ? [
        `backend <b>${escapeHtml(row.backend)}</b>`,
        `model <b>${escapeHtml(row.model)}</b>`,
        row.simulated
          ? `<span class="badge sim">simulated</span> profile <b>${escapeHtml(row.profile ?? "")}</b>`
          : "",
        `seed ${row.seed}`,
        `${row.iterations} LLM calls (ideal ${row.idealIterations})`,
        `${duration(row.wallMs)}`,
        `${row.inputTokens} prompt tokens`,
      ].filter(Boolean)
    : [];
  const problems = row
    ? [row.answerProblem, row.stateProblem, row.errorMessage].filter(
        (problem): problem is string => !!problem,
      )
    : [];
  const start = trace.startMessages
    .map(
      (message) =>
        `<div class="event"><span class="t"></span><span class="kind k-${escapeHtml(message.metadata.type)}">${escapeHtml(message.metadata.type.replace(/_/g, " "))}</span><pre>${escapeHtml(describeMessage(message))}</pre></div>`,
    )
    .join("");
  const list = events.map(renderTimelineEvent).join("");
  const snapshot = trace.finalSnapshot ? JSON.stringify(trace.finalSnapshot, null, 1) : null;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(`${trace.scenario} × ${trace.config.name}`)}</title><style>${PAGE_CSS}</style></head>
<body><main>
${options.backHref ? `<div class="meta"><a href="${escapeHtml(options.backHref)}">← dashboard</a></div>` : ""}
<h1>${escapeHtml(trace.scenario)} × ${escapeHtml(trace.config.name)} ${status}</h1>
<div class="meta">${facts.join(" · ")}</div>
<div class="meta">run <code>${escapeHtml(trace.key)}</code> · runId <code>${escapeHtml(trace.runId)}</code>${trace.initialSnapshot ? " · started from a persisted snapshot" : ""}</div>
${problems.length > 0 ? `<section><b>Problems</b><ul>${problems.map((problem) => `<li>${escapeHtml(problem)}</li>`).join("")}</ul></section>` : ""}
<section><h2>Timeline</h2>${timelineStrip(trace, totalMs)}</section>
<section><h2>Start</h2><details ${trace.initialSnapshot ? "" : "open"}><summary>${trace.startMessages.length} messages${trace.initialSnapshot ? " from the persisted snapshot" : ""}</summary>${start}</details></section>
<section><h2>Events</h2>${list || "<p>No events.</p>"}</section>
<section><h2>Final persisted snapshot</h2>${
    snapshot
      ? `<details><summary>${snapshot.length.toLocaleString("en")} characters of JSON (resume it with WorkflowRunner.resume)</summary><pre>${escapeHtml(snapshot.slice(0, 200_000))}</pre></details>`
      : "<p>None (the AI SDK loop has no persisted state).</p>"
  }</section>
</main></body></html>
`;
}
