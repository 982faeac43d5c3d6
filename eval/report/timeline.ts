/**
 * The per-run timeline page: every message, nudge, LLM exchange, compaction and statechart
 * transition of one run in time order, with a strip chart on top and the final persisted
 * snapshot at the bottom. Self-contained like the dashboard.
 */
import type { Message } from "../../src/core/messages.ts";
import type { LLMResponse } from "../../src/core/types.ts";
import type { RunRow } from "../batch/row.ts";
import type { RunTrace } from "../run/types.ts";
import { duration, escapeHtml } from "./format.ts";
import { PAGE_CSS } from "./html.ts";

interface TimelineEvent {
  at: number;
  order: number;
  kind: string;
  label: string;
  body: string;
}

function describeResponse(response: LLMResponse | null): string {
  if (response === null) return "";
  if (Array.isArray(response)) {
    return response
      .map(
        (call) =>
          `${call.tool}(${JSON.stringify(call.args)})${call.reasoning ? `\n  reasoning: ${call.reasoning}` : ""}`,
      )
      .join("\n");
  }
  return `text: ${response.content}`;
}

function describeMessage(message: Message): string {
  const calls = (message.toolCalls ?? []).map(
    (call) => `→ ${call.name}(${JSON.stringify(call.args)})  [${call.callId}]`,
  );
  const head = message.toolName
    ? `${message.toolName}${message.toolCallId ? ` [${message.toolCallId}]` : ""}: `
    : "";
  const content =
    message.content.length > 1500
      ? `${message.content.slice(0, 1500)}… (${message.content.length} chars)`
      : message.content;
  return [head + content, ...calls].filter((part) => part.trim().length > 0).join("\n");
}

/** Every event of a run, in time order (ties keep their recording order). */
export function timelineEvents(trace: RunTrace): TimelineEvent[] {
  const events: TimelineEvent[] = [];
  let order = 0;
  const push = (at: number, kind: string, label: string, body: string) => {
    events.push({ at, order: order++, kind, label, body });
  };
  for (const transition of trace.transitions) {
    push(transition.at, "state", `state: ${transition.state}`, `iteration ${transition.iteration}`);
  }
  trace.exchanges.forEach((exchange, index) => {
    const body = exchange.error
      ? `error ${exchange.error.name}: ${exchange.error.message}`
      : describeResponse(exchange.response);
    push(
      exchange.at,
      "llm",
      `LLM call ${index + 1}`,
      `${duration(exchange.durationMs)} · ${exchange.promptTokens} → ${exchange.completionTokens} tokens\n${body}`,
    );
  });
  for (const { at, message } of trace.messages) {
    push(at, message.metadata.type, message.metadata.type.replace(/_/g, " "), describeMessage(message));
  }
  for (const compaction of trace.compactions) {
    push(
      compaction.at,
      "compaction",
      `compaction phase ${compaction.phaseReached}`,
      `iteration ${compaction.stepIndex}: ${compaction.tokensBefore} → ${compaction.tokensAfter} tokens (budget ${compaction.budgetTokens}), ${compaction.messagesBefore} → ${compaction.messagesAfter} messages`,
    );
  }
  return events.sort((a, b) => a.at - b.at || a.order - b.order);
}

const MARK_COLORS: Record<string, string> = {
  llm: "#5b7db1",
  compaction: "#0b6bcb",
  retry_nudge: "#e0a100",
  step_nudge: "#e0a100",
  prerequisite_nudge: "#e0a100",
  text_response: "#c0392b",
  tool_result: "#7f8c8d",
  tool_call: "#27ae60",
};

/** A strip chart: LLM calls as bars, nudges, results and compactions as ticks. */
export function timelineStrip(trace: RunTrace, totalMs: number, width = 1100): string {
  const left = 90;
  const plot = width - left - 20;
  const span = Math.max(1, totalMs);
  const x = (at: number) => left + (at / span) * plot;
  const lanes = ["llm", "tool_call", "tool_result", "nudge", "compaction"];
  const laneY = (lane: string) => 14 + lanes.indexOf(lane) * 20;
  const marks: string[] = lanes.map(
    (lane) =>
      `<text x="${left - 8}" y="${laneY(lane) + 10}" text-anchor="end" font-size="11" fill="#556">${lane.replace("_", " ")}</text>`,
  );
  for (const exchange of trace.exchanges) {
    marks.push(
      `<rect x="${x(exchange.at)}" y="${laneY("llm")}" width="${Math.max(2, (exchange.durationMs / span) * plot)}" height="14" fill="${exchange.error ? "#c0392b" : MARK_COLORS.llm}"><title>${escapeHtml(describeResponse(exchange.response).slice(0, 200) || (exchange.error?.message ?? ""))}</title></rect>`,
    );
  }
  for (const { at, message } of trace.messages) {
    const type = message.metadata.type;
    const lane =
      type.endsWith("nudge") || type === "text_response"
        ? "nudge"
        : type === "tool_call" || type === "tool_result"
          ? type
          : null;
    if (!lane) continue;
    marks.push(
      `<rect x="${x(at) - 1}" y="${laneY(lane)}" width="3" height="14" fill="${MARK_COLORS[type] ?? "#888"}"><title>${escapeHtml(`${type}: ${message.content.slice(0, 160)}`)}</title></rect>`,
    );
  }
  for (const compaction of trace.compactions) {
    marks.push(
      `<rect x="${x(compaction.at) - 2}" y="${laneY("compaction")}" width="5" height="14" fill="${MARK_COLORS.compaction}"><title>phase ${compaction.phaseReached}: ${compaction.tokensBefore} → ${compaction.tokensAfter}</title></rect>`,
    );
  }
  const height = 14 + lanes.length * 20 + 18;
  marks.push(`<text x="${left}" y="${height - 4}" font-size="11" fill="#667">0</text>`);
  marks.push(
    `<text x="${width - 20}" y="${height - 4}" text-anchor="end" font-size="11" fill="#667">${duration(totalMs)}</text>`,
  );
  return `<svg xmlns="http://www.w3.org/2000/svg" class="chart strip" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" font-family="system-ui, sans-serif">${marks.join("")}</svg>`;
}

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
  const list = events
    .map(
      (event) =>
        `<div class="event"><span class="t">${event.at} ms</span><span class="kind k-${escapeHtml(event.kind)}">${escapeHtml(event.label)}</span><pre>${escapeHtml(event.body)}</pre></div>`,
    )
    .join("");
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
