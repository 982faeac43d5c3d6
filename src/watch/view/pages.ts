/**
 * The watch server's HTML: the runs list and one run's page, server-rendered, each with a small
 * inline script that applies the server's live updates (Server-Sent Events). No external assets.
 */

import type { WatchEvent } from "../report/index.ts";
import { parkedBadge, parkedDetail } from "./approval-view.ts";
import { duration, escapeHtml } from "./format.ts";
import { llmTotals, type RunRecord } from "./run-record.ts";
import { renderStatechart } from "./statechart.ts";
import {
  compactionEvent,
  compactionMark,
  exchangeEvent,
  exchangeMark,
  messageEvent,
  messageMark,
  renderTimelineEvent,
  stripChart,
  stripTransform,
  transitionEvent,
} from "./timeline.ts";

const CSS = `
body{font-family:system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d2433}
main{max-width:1180px;margin:0 auto;padding:18px 24px}
h1{font-size:1.35rem;margin:.2rem 0 .5rem} h2{font-size:1.05rem;margin:1.2rem 0 .5rem}
a{color:#0b5cad} .meta{color:#556;font-size:.9rem;margin:.25rem 0}
section{background:#fff;border:1px solid #dde2ea;border-radius:8px;padding:10px 14px;margin:12px 0;overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:.9rem} th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #eceff4}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:.8rem;font-weight:600;background:#e6e9ef;color:#334}
.badge.done{background:#d9f2e3;color:#17663a} .badge.failed{background:#fbe0dd;color:#9b2418} .badge.cancelled{background:#eee;color:#555} .badge.live{background:#e1ecfb;color:#0b4fa0}
.event{display:grid;grid-template-columns:70px 170px 1fr;gap:8px;border-top:1px solid #eef0f4;padding:4px 0;font-size:.85rem}
.event pre{margin:0;white-space:pre-wrap;word-break:break-word;font-size:.8rem}
.t{color:#778;text-align:right} .kind{font-weight:600}
.k-state{color:#5a6b85} .k-llm{color:#2f5597} .k-compaction{color:#0b6bcb}
.k-step_nudge,.k-retry_nudge,.k-prerequisite_nudge,.k-unknown_tool_nudge{color:#a86d00} .k-text_response{color:#b03a2e}
.k-tool_call{color:#1e8449} .k-tool_result{color:#6c7a7d}
svg.statechart .state rect{fill:#fff;stroke:#8894a8;stroke-width:1.2}
svg.statechart .state.final rect{fill:#f3f4f7}
svg.statechart .state.current rect{fill:#ffe08a;stroke:#c48a00;stroke-width:2.5}
svg.statechart .state.current text{font-weight:700}
svg.statechart .edge{fill:none;stroke:#aab3c2;stroke-width:1.2}
`;

function page(title: string, body: string, script: string, mainAttributes = ""): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title><style>${CSS}</style></head>
<body><main${mainAttributes}>${body}</main><script>${script}</script></body></html>
`;
}

/** The outcome badge of a run: live (with its state), awaiting approval, done, failed or cancelled. */
export function outcomeBadge(record: RunRecord): string {
  const parked = parkedBadge(record);
  if (parked !== null) return parked;
  if (record.finished === null) {
    return `<span class="badge live">running${record.currentState ? `: ${escapeHtml(record.currentState)}` : ""}</span>`;
  }
  return `<span class="badge ${record.finished.outcome}">${record.finished.outcome}</span>`;
}

/** The run's final result or typed error, the calls a parked run waits on, or nothing while it runs. */
export function outcomeDetail(record: RunRecord): string {
  const parked = parkedDetail(record);
  if (parked !== null) return parked;
  const finished = record.finished;
  if (finished === null) return "";
  if (finished.error) {
    return `<div class="error"><b>${escapeHtml(finished.error.name)}</b>: ${escapeHtml(finished.error.message)}</div>`;
  }
  return `<div>result <pre>${escapeHtml(JSON.stringify(finished.result ?? null, null, 1).slice(0, 4000))}</pre></div>`;
}

/** Calls, tokens and model time of the run so far. */
export function totalsLine(record: RunRecord): string {
  const totals = llmTotals(record);
  return `${totals.calls} LLM calls · ${totals.promptTokens} prompt → ${totals.completionTokens} completion tokens (estimated) · ${duration(totals.ms)} in the model · ${record.totals.compactions} compactions · ${duration(record.lastAt)} so far`;
}

/** The events held in memory from sequence `from` (events received before it), and the number of the first LLM call among them. */
function eventsFrom(record: RunRecord, from: number): { events: WatchEvent[]; firstCall: number } {
  const events = record.events.slice(Math.max(0, from - record.dropped));
  const calls = events.filter((event) => event.type === "llm.called").length;
  return { events, firstCall: record.totals.calls - calls + 1 };
}

/** The timeline rows of a run's events from sequence `from` (held in memory), in the order they arrived. */
export function timelineRows(record: RunRecord, from = 0): string[] {
  const rows: string[] = [];
  const { events, firstCall } = eventsFrom(record, from);
  let exchangeNumber = firstCall - 1;
  for (const event of events) {
    switch (event.type) {
      case "state.entered":
        rows.push(renderTimelineEvent(transitionEvent(event)));
        break;
      case "message.appended":
        rows.push(renderTimelineEvent(messageEvent(event)));
        break;
      case "llm.called":
        exchangeNumber += 1;
        rows.push(renderTimelineEvent(exchangeEvent(event, exchangeNumber)));
        break;
      case "context.compacted":
        rows.push(renderTimelineEvent(compactionEvent(event)));
        break;
      case "run.finished":
        rows.push(
          renderTimelineEvent({
            at: event.at,
            kind: `run_${event.outcome}`,
            label: `run ${event.outcome}`,
            body: event.error ? `${event.error.name}: ${event.error.message}` : "",
          }),
        );
        break;
      case "run.started":
        break;
    }
  }
  return rows;
}

/** The strip chart marks of a run's events from sequence `from` (held in memory), in arrival order. */
export function stripMarks(record: RunRecord, from = 0): string {
  return eventsFrom(record, from)
    .events.map((event) => {
      switch (event.type) {
        case "llm.called":
          return exchangeMark(event);
        case "message.appended":
          return messageMark(event);
        case "context.compacted":
          return compactionMark(event);
        default:
          return "";
      }
    })
    .join("");
}

function statechartHtml(record: RunRecord): string {
  return record.statechart
    ? renderStatechart(record.statechart, record.currentState)
    : "<p>The source sent no statechart.</p>";
}

/** What the page says of events no longer held in memory, and of a run file that could not be written. */
export function memoryNote(record: RunRecord): string {
  const notes: string[] = [];
  if (record.dropped > 0) {
    notes.push(
      `The first ${record.dropped} of ${record.eventCount} events are not shown (the server holds the newest ${record.keep} in memory); events.json and the run's file have every one.`,
    );
  }
  if (record.writeError !== null) notes.push(`Not recorded on disk: ${record.writeError}.`);
  return escapeHtml(notes.join(" "));
}

/**
 * What a run page's script applies when new events arrive (one SSE `update`, its id `count`):
 * the rows and strip marks of the events after `from` only, or, with `reset`, of every event held
 * in memory (the page's rows are replaced).
 */
export interface RunUpdate {
  /** Events received before this update's first one. */
  from: number;
  /** Events received in all (the SSE id). */
  count: number;
  /** The rows and marks replace the page's (it was too far behind). */
  reset: boolean;
  rows: string[];
  marks: string;
  state: string | null;
  outcome: string;
  detail: string;
  totals: string;
  note: string;
  statechart: string | null;
  stripTransform: string;
  stripEnd: string;
  finished: boolean;
}

/**
 * The update for a page that shows a run's first `from` events: the events after them, or a reset
 * with every event held in memory when the page is behind what memory holds (or ahead of the run).
 */
export function runUpdate(record: RunRecord, from: number): RunUpdate {
  const reset = from < record.dropped || from > record.eventCount;
  const start = reset ? record.dropped : from;
  const described = reset || eventsFrom(record, start).events.some((event) => event.type === "run.started");
  const totalMs = Math.max(record.lastAt, 1);
  return {
    from: start,
    count: record.eventCount,
    reset,
    rows: timelineRows(record, start),
    marks: stripMarks(record, start),
    state: record.currentState,
    outcome: outcomeBadge(record),
    detail: outcomeDetail(record),
    totals: totalsLine(record),
    note: memoryNote(record),
    statechart: described ? statechartHtml(record) : null,
    stripTransform: stripTransform(totalMs),
    stripEnd: duration(totalMs),
    finished: record.finished !== null,
  };
}

// The page asks for the events after those it shows (`since`); on a reconnect the browser sends
// the last update's id (Last-Event-ID), which the server prefers.
const RUN_SCRIPT = `
const main = document.querySelector("main");
const runId = main.dataset.run;
let count = Number(main.dataset.count);
const source = new EventSource("/runs/" + encodeURIComponent(runId) + "/stream?since=" + count);
source.addEventListener("update", (message) => {
  const update = JSON.parse(message.data);
  if (!update.reset && update.from !== count) {
    // Out of step (should not happen): start again from a fresh render.
    source.close();
    location.reload();
    return;
  }
  const events = document.getElementById("events");
  const marks = document.querySelector("#strip g.marks");
  if (update.reset) {
    events.innerHTML = "";
    marks.innerHTML = "";
  }
  count = update.count;
  main.dataset.count = String(count);
  events.insertAdjacentHTML("beforeend", update.rows.join(""));
  if (update.marks !== "") marks.insertAdjacentHTML("beforeend", update.marks);
  marks.setAttribute("transform", update.stripTransform);
  document.querySelector("#strip text.end").textContent = update.stripEnd;
  if (update.statechart !== null) document.getElementById("statechart").innerHTML = update.statechart;
  for (const node of document.querySelectorAll("svg.statechart .state")) {
    node.classList.toggle("current", node.dataset.state === update.state);
  }
  document.getElementById("outcome").innerHTML = update.outcome;
  document.getElementById("detail").innerHTML = update.detail;
  document.getElementById("totals").textContent = update.totals;
  document.getElementById("note").innerHTML = update.note;
  if (update.finished) source.close();
});
`;

/** Where a run came from, and "resumed from a checkpoint" when it went on from one. */
function sourceLabel(record: RunRecord): string {
  return record.resumed ? `${record.source}, resumed from a checkpoint` : record.source;
}

/** One run's page: statechart, outcome, LLM totals, strip chart and timeline, updated live. */
export function renderRunPage(record: RunRecord): string {
  const started = record.startedAt > 0 ? new Date(record.startedAt).toISOString() : "at an unrecorded time";
  const body = `<div class="meta"><a href="/">← runs</a></div>
<h1>${escapeHtml(record.name)} <span id="outcome">${outcomeBadge(record)}</span></h1>
<div class="meta">${escapeHtml(sourceLabel(record))} · run <code>${escapeHtml(record.runId)}</code> · started ${escapeHtml(started)}</div>
<div class="meta" id="totals">${escapeHtml(totalsLine(record))}</div>
<div class="meta" id="note">${memoryNote(record)}</div>
<div id="detail">${outcomeDetail(record)}</div>
<section><h2>Statechart</h2><div id="statechart">${statechartHtml(record)}</div></section>
<section><h2>Timeline</h2><div id="strip">${stripChart(stripMarks(record, record.dropped), Math.max(record.lastAt, 1))}</div></section>
<section><h2>Events</h2><div id="events">${timelineRows(record, record.dropped).join("")}</div></section>`;
  const attributes = ` data-run="${escapeHtml(record.runId)}" data-count="${record.eventCount}"`;
  return page(`${record.name} · forge watch`, body, RUN_SCRIPT, attributes);
}

/** The rows of the runs table, newest first. */
export function runRows(records: readonly RunRecord[]): string {
  if (records.length === 0) {
    return '<tr><td colspan="5">No runs yet. Point a runner (createWatchReporter) or the proxy (--watch) at this server.</td></tr>';
  }
  return records
    .map(
      (record) =>
        `<tr data-run="${escapeHtml(record.runId)}"><td><a href="/runs/${encodeURIComponent(record.runId)}">${escapeHtml(record.name)}</a></td><td>${escapeHtml(sourceLabel(record))}</td><td>${outcomeBadge(record)}</td><td>${llmTotals(record).calls}</td><td>${record.startedAt > 0 ? escapeHtml(new Date(record.startedAt).toISOString()) : ""}</td></tr>`,
    )
    .join("");
}

const LIST_SCRIPT = `
const source = new EventSource("/stream");
source.addEventListener("runs", (message) => {
  document.getElementById("runs").innerHTML = JSON.parse(message.data).rows;
});
`;

/** The runs list, updated live. */
export function renderRunsPage(records: readonly RunRecord[], dir: string): string {
  const body = `<h1>forge watch</h1>
<div class="meta">Runs recorded in <code>${escapeHtml(dir)}</code>; this page needs no internet.</div>
<section><table><thead><tr><th>run</th><th>source</th><th>state</th><th>LLM calls</th><th>started</th></tr></thead><tbody id="runs">${runRows(records)}</tbody></table></section>`;
  return page("forge watch", body, LIST_SCRIPT);
}
