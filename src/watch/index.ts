/** The local run viewer: `startWatchServer()` serves runs live on 127.0.0.1; `createWatchReporter()` sends them. */

export { type WatchEvent, WatchOutcome, WatchSource, watchEventSchema } from "./report/events.ts";
export { createWatchReporter, type WatchReporter, type WatchReporterOptions } from "./report/reporter.ts";
export { type StatechartGraph, type StatechartState, statechartOf } from "./report/statechart-graph.ts";
export {
  createWatchTransport,
  openWatchRun,
  WatchReportError,
  type WatchRun,
  type WatchTransport,
  type WatchTransportOptions,
} from "./report/transport.ts";
export { createWorkerWatch, type WatchedQueuedRun, watchRunIdOf } from "./report/worker-watch.ts";
export { createWatchApp, type WatchAppOptions } from "./server/app.ts";
export { EvalTraceError, eventsOfTrace, readEvalTraces } from "./server/eval-trace.ts";
export { RunStore, type RunStoreOptions, WatchRunFileError } from "./server/run-store.ts";
export {
  DEFAULT_WATCH_DIR,
  DEFAULT_WATCH_PORT,
  type RunningWatchServer,
  type StartWatchServerOptions,
  startWatchServer,
} from "./server/server.ts";
export {
  replayWatchedTrace,
  traceOfRun,
  type WatchedRunTrace,
  WatchReplayError,
  type WatchReplayResult,
} from "./server/watched-trace.ts";
export { DEFAULT_MAX_RUN_EVENTS, type RunRecord, type RunTotals } from "./view/run-record.ts";
export { renderStatechart } from "./view/statechart.ts";
