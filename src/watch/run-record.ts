/**
 * A watched run as the server holds it: its events folded into a timeline trace, its current
 * state and its outcome. Pure: applying the same events gives the same record.
 */
import type { WatchEvent } from "./events.ts";
import type { StatechartGraph } from "./statechart.ts";
import type { TimelineTrace } from "./timeline.ts";

/** What the run list and the run page show of a run. */
export interface RunRecord {
  runId: string;
  name: string;
  source: string;
  /** The run went on from a checkpoint. */
  resumed: boolean;
  /** The workflow actor's own run id, when the source reported it. */
  workflowRunId: string | null;
  /** ms since the epoch (0 until `run.started` arrives). */
  startedAt: number;
  statechart: StatechartGraph | null;
  currentState: string | null;
  trace: TimelineTrace;
  /** The run's last event time (ms since its start). */
  lastAt: number;
  finished: Extract<WatchEvent, { type: "run.finished" }> | null;
  events: WatchEvent[];
}

/** An empty record for a run id. */
export function createRunRecord(runId: string): RunRecord {
  return {
    runId,
    name: runId,
    source: "runner",
    resumed: false,
    workflowRunId: null,
    startedAt: 0,
    statechart: null,
    currentState: null,
    trace: { messages: [], exchanges: [], compactions: [], transitions: [] },
    lastAt: 0,
    finished: null,
    events: [],
  };
}

/** Fold one event into a record (mutating it, for the server's live copy). */
export function applyWatchEvent(record: RunRecord, event: WatchEvent): void {
  record.events.push(event);
  record.lastAt = Math.max(record.lastAt, event.at);
  switch (event.type) {
    case "run.started":
      record.name = event.name;
      record.source = event.source;
      record.resumed = event.resumed ?? false;
      record.startedAt = event.startedAt;
      record.statechart = event.statechart;
      break;
    case "state.entered":
      record.currentState = event.state;
      if (event.workflowRunId !== undefined) record.workflowRunId = event.workflowRunId;
      record.trace.transitions.push({ at: event.at, state: event.state, iteration: event.iteration });
      break;
    case "message.appended":
      record.trace.messages.push({ at: event.at, message: event.message });
      break;
    case "llm.called": {
      const { type: _type, ...exchange } = event;
      record.trace.exchanges.push(exchange);
      break;
    }
    case "context.compacted": {
      const { type: _type, ...compaction } = event;
      record.trace.compactions.push(compaction);
      break;
    }
    case "run.finished":
      record.finished = event;
      break;
  }
}

/** Totals of a run's LLM calls: count, tokens and time spent waiting for the model. */
export function llmTotals(record: RunRecord): {
  calls: number;
  promptTokens: number;
  completionTokens: number;
  ms: number;
} {
  const exchanges = record.trace.exchanges;
  return {
    calls: exchanges.length,
    promptTokens: exchanges.reduce((sum, exchange) => sum + exchange.promptTokens, 0),
    completionTokens: exchanges.reduce((sum, exchange) => sum + exchange.completionTokens, 0),
    ms: exchanges.reduce((sum, exchange) => sum + exchange.durationMs, 0),
  };
}
