/**
 * A watched run as the server holds it: its events folded into a timeline trace, its current
 * state and its outcome. Pure: applying the same events gives the same record. At most `keep`
 * events (and their trace entries) stay in memory: older ones are dropped, their totals kept.
 */
import type { StatechartGraph, WatchEvent } from "../report/index.ts";
import type { TimelineTrace } from "./timeline.ts";

/** How many of a run's events the watch server keeps in memory by default (the file keeps all). */
export const DEFAULT_MAX_RUN_EVENTS = 5000;

/** Totals over every event of a run, those dropped from memory included. */
export interface RunTotals {
  /** LLM calls. */
  calls: number;
  promptTokens: number;
  completionTokens: number;
  /** Time spent waiting for the model. */
  ms: number;
  compactions: number;
}

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
  /** The trace of the events held in memory (`events`). */
  trace: TimelineTrace;
  /** The run's last event time (ms since its start). */
  lastAt: number;
  finished: Extract<WatchEvent, { type: "run.finished" }> | null;
  /** The events held in memory: the run's events from index `dropped` on. */
  events: WatchEvent[];
  /** Events received in all; an event's sequence number is its index + 1. */
  eventCount: number;
  /** The oldest events no longer held in memory (the run's file has them). */
  dropped: number;
  /** How many events are held in memory at most (`Infinity`: all). */
  keep: number;
  totals: RunTotals;
  /** The last failure to write the run's file, or null. */
  writeError: string | null;
}

/** An empty record for a run id, holding at most `keep` events in memory. */
export function createRunRecord(runId: string, keep = Number.POSITIVE_INFINITY): RunRecord {
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
    eventCount: 0,
    dropped: 0,
    keep,
    totals: { calls: 0, promptTokens: 0, completionTokens: 0, ms: 0, compactions: 0 },
    writeError: null,
  };
}

/** Fold one event into a record (mutating it, for the server's live copy). */
export function applyWatchEvent(record: RunRecord, event: WatchEvent): void {
  record.events.push(event);
  record.eventCount += 1;
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
      record.totals.calls += 1;
      record.totals.promptTokens += event.promptTokens;
      record.totals.completionTokens += event.completionTokens;
      record.totals.ms += event.durationMs;
      break;
    }
    case "context.compacted": {
      const { type: _type, ...compaction } = event;
      record.trace.compactions.push(compaction);
      record.totals.compactions += 1;
      break;
    }
    case "run.finished":
      record.finished = event;
      break;
  }
  // Dropped in slices (an eighth of the cap at once), so each event costs O(1) on average.
  if (record.events.length > record.keep + Math.max(1, Math.floor(record.keep / 8))) {
    dropOldest(record, record.events.length - record.keep);
  }
}

/** Drop a record's `count` oldest events from memory, and their trace entries. */
function dropOldest(record: RunRecord, count: number): void {
  const gone = record.events.splice(0, count);
  const byType = { "state.entered": 0, "message.appended": 0, "llm.called": 0, "context.compacted": 0 };
  for (const event of gone) if (event.type in byType) byType[event.type as keyof typeof byType] += 1;
  record.trace.transitions.splice(0, byType["state.entered"]);
  record.trace.messages.splice(0, byType["message.appended"]);
  record.trace.exchanges.splice(0, byType["llm.called"]);
  record.trace.compactions.splice(0, byType["context.compacted"]);
  record.dropped += count;
}

/** Totals of a run's LLM calls: count, tokens and time spent waiting for the model. */
export function llmTotals(record: RunRecord): {
  calls: number;
  promptTokens: number;
  completionTokens: number;
  ms: number;
} {
  const { calls, promptTokens, completionTokens, ms } = record.totals;
  return { calls, promptTokens, completionTokens, ms };
}
