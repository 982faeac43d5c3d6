/**
 * A run's timeline: every state entered, LLM exchange, message (nudges by kind) and compaction in
 * time order, and a strip chart of them. Shared by the watch pages and the eval's timeline report.
 */
import type { CompactEvent } from "../context/context-manager.ts";
import type { Message } from "../core/messages.ts";
import type { LLMResponse } from "../core/types.ts";
import { duration, escapeHtml } from "./format.ts";

/** One LLM call as recorded: when it started, how long it took, its tokens, and what it returned. */
export interface TimelineExchange {
  /** Milliseconds since the run started. */
  at: number;
  durationMs: number;
  promptTokens: number;
  completionTokens: number;
  response: LLMResponse | null;
  error: { name: string; message: string; statusCode?: number; body?: string } | null;
}

/** A compaction with its time (ms since the run started). */
export interface TimelineCompaction extends CompactEvent {
  at: number;
}

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

/** A strip chart: LLM calls as bars, nudges, results and compactions as ticks. */
export function timelineStrip(trace: TimelineTrace, totalMs: number, width = 1100): string {
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
