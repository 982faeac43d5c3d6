/**
 * A run's timeline: every state entered, LLM exchange, message (nudges by kind) and compaction in
 * time order, and a strip chart of them. Shared by the watch pages and the eval's timeline report.
 */
import type { Message } from "../../core/messages.ts";
import type { LLMResponse } from "../../core/types.ts";
import type { TimelineCompaction, TimelineExchange } from "../report/index.ts";
import { duration, escapeHtml } from "./format.ts";

/** A statechart state entered, with its time and the loop's iteration then. */
export interface TimelineTransition {
  at: number;
  state: string;
  iteration: number;
}

/** What a timeline is drawn from: the parts of a run's trace that carry times. */
export interface TimelineTrace {
  /** Every message appended during the run, with its time (ms since the start). */
  messages: { at: number; message: Message }[];
  exchanges: TimelineExchange[];
  compactions: TimelineCompaction[];
  /** Statechart states entered, in order. */
  transitions: TimelineTransition[];
}

/** One row of a timeline. `kind` is `state`, `llm`, `compaction` or a message type (`step_nudge`, …). */
export interface TimelineEvent {
  at: number;
  order: number;
  kind: string;
  label: string;
  body: string;
}

/** An LLM answer as text: each tool call with its arguments, or the prose. */
export function describeResponse(response: LLMResponse | null): string {
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

/** A message as text: its tool name and call id, its content (cut at 1,500 characters), its tool calls. */
export function describeMessage(message: Message): string {
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

/** The timeline row of a state entered. */
export function transitionEvent(transition: TimelineTransition): Omit<TimelineEvent, "order"> {
  return {
    at: transition.at,
    kind: "state",
    label: `state: ${transition.state}`,
    body: `iteration ${transition.iteration}`,
  };
}

/** The timeline row of the `number`th (1-based) LLM call. */
export function exchangeEvent(exchange: TimelineExchange, number: number): Omit<TimelineEvent, "order"> {
  const body = exchange.error
    ? `error ${exchange.error.name}: ${exchange.error.message}`
    : describeResponse(exchange.response);
  return {
    at: exchange.at,
    kind: "llm",
    label: `LLM call ${number}`,
    body: `${duration(exchange.durationMs)} · ${exchange.promptTokens} → ${exchange.completionTokens} tokens\n${body}`,
  };
}

/** The timeline row of an appended message, labelled by its type (`step nudge`, `tool result`, …). */
export function messageEvent(entry: { at: number; message: Message }): Omit<TimelineEvent, "order"> {
  const type = entry.message.metadata.type;
  return { at: entry.at, kind: type, label: type.replace(/_/g, " "), body: describeMessage(entry.message) };
}

/**
 * The timeline row of a compaction. A phase or budget of 0 means the source did not know it (the
 * proxy's compactor does not say), and is left out.
 */
export function compactionEvent(compaction: TimelineCompaction): Omit<TimelineEvent, "order"> {
  const budget = compaction.budgetTokens > 0 ? ` (budget ${compaction.budgetTokens})` : "";
  return {
    at: compaction.at,
    kind: "compaction",
    label: compaction.phaseReached > 0 ? `compaction phase ${compaction.phaseReached}` : "compaction",
    body: `iteration ${compaction.stepIndex}: ${compaction.tokensBefore} → ${compaction.tokensAfter} tokens${budget}, ${compaction.messagesBefore} → ${compaction.messagesAfter} messages (${compaction.messagesBefore - compaction.messagesAfter} dropped or summarized)`,
  };
}

/** Every event of a run, in time order (ties keep their recording order). */
export function timelineEvents(trace: TimelineTrace): TimelineEvent[] {
  const events: TimelineEvent[] = [];
  let order = 0;
  const push = (event: Omit<TimelineEvent, "order">) => {
    events.push({ ...event, order: order++ });
  };
  for (const transition of trace.transitions) push(transitionEvent(transition));
  for (const [index, exchange] of trace.exchanges.entries()) push(exchangeEvent(exchange, index + 1));
  for (const entry of trace.messages) push(messageEvent(entry));
  for (const compaction of trace.compactions) push(compactionEvent(compaction));
  return events.sort((a, b) => a.at - b.at || a.order - b.order);
}

/** One timeline row as HTML: a `div.event` with the time, a `span.kind.k-<kind>` label and the body. */
export function renderTimelineEvent(event: Omit<TimelineEvent, "order">): string {
  return `<div class="event" data-kind="${escapeHtml(event.kind)}"><span class="t">${event.at} ms</span><span class="kind k-${escapeHtml(event.kind)}">${escapeHtml(event.label)}</span><pre>${escapeHtml(event.body)}</pre></div>`;
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

const STRIP_LEFT = 90;
const STRIP_RIGHT = 20;
const LANES = ["llm", "tool_call", "tool_result", "nudge", "compaction"];
const laneY = (lane: string) => 14 + LANES.indexOf(lane) * 20;

/**
 * The strip's marks are drawn in time (x in ms) inside a group scaled to the width, so a live page
 * appends the marks of new events and rescales, without the older marks being sent again. Ticks
 * are lines whose width does not scale.
 */
function tick(at: number, lane: string, color: string, width: number, title: string): string {
  return `<line x1="${at}" x2="${at}" y1="${laneY(lane)}" y2="${laneY(lane) + 14}" stroke="${color}" stroke-width="${width}" vector-effect="non-scaling-stroke"><title>${escapeHtml(title)}</title></line>`;
}

/** An LLM call on the strip: a bar as long as the call (and a tick, so a short one shows). */
export function exchangeMark(exchange: TimelineExchange): string {
  const color = exchange.error ? "#c0392b" : (MARK_COLORS.llm as string);
  const title = describeResponse(exchange.response).slice(0, 200) || (exchange.error?.message ?? "");
  return `<rect x="${exchange.at}" y="${laneY("llm")}" width="${Math.max(0, exchange.durationMs)}" height="14" fill="${color}"><title>${escapeHtml(title)}</title></rect>${tick(exchange.at, "llm", color, 2, title)}`;
}

/** A message on the strip (tool calls, results, nudges and text answers), or "" for others. */
export function messageMark({ at, message }: { at: number; message: Message }): string {
  const type = message.metadata.type;
  const lane =
    type.endsWith("nudge") || type === "text_response"
      ? "nudge"
      : type === "tool_call" || type === "tool_result"
        ? type
        : null;
  if (!lane) return "";
  return tick(at, lane, MARK_COLORS[type] ?? "#888", 3, `${type}: ${message.content.slice(0, 160)}`);
}

/** A compaction on the strip. */
export function compactionMark(compaction: TimelineCompaction): string {
  return tick(
    compaction.at,
    "compaction",
    MARK_COLORS.compaction as string,
    5,
    `phase ${compaction.phaseReached}: ${compaction.tokensBefore} → ${compaction.tokensAfter}`,
  );
}

/** The transform of the strip's marks group for a run `totalMs` long, on a strip `width` wide. */
export function stripTransform(totalMs: number, width = 1100): string {
  const plot = width - STRIP_LEFT - STRIP_RIGHT;
  return `translate(${STRIP_LEFT} 0) scale(${plot / Math.max(1, totalMs)} 1)`;
}

/** A strip chart of the given marks (`exchangeMark`, `messageMark`, `compactionMark`). */
export function stripChart(marks: string, totalMs: number, width = 1100): string {
  const labels = LANES.map(
    (lane) =>
      `<text x="${STRIP_LEFT - 8}" y="${laneY(lane) + 10}" text-anchor="end" font-size="11" fill="#556">${lane.replace("_", " ")}</text>`,
  ).join("");
  const height = 14 + LANES.length * 20 + 18;
  return `<svg xmlns="http://www.w3.org/2000/svg" class="chart strip" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" font-family="system-ui, sans-serif">${labels}<g class="marks" transform="${stripTransform(totalMs, width)}">${marks}</g><text x="${STRIP_LEFT}" y="${height - 4}" font-size="11" fill="#667">0</text><text class="end" x="${width - STRIP_RIGHT}" y="${height - 4}" text-anchor="end" font-size="11" fill="#667">${duration(totalMs)}</text></svg>`;
}

/** A strip chart: LLM calls as bars, nudges, results and compactions as ticks. */
export function timelineStrip(trace: TimelineTrace, totalMs: number, width = 1100): string {
  const marks = [
    ...trace.exchanges.map(exchangeMark),
    ...trace.messages.map(messageMark),
    ...trace.compactions.map(compactionMark),
  ];
  return stripChart(marks.join(""), totalMs, width);
}
