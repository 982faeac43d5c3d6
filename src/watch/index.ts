/** The local run viewer: `startWatchServer()` serves runs live on 127.0.0.1; `createWatchReporter()` sends them. */
export { createWatchApp, type WatchAppOptions } from "./app.ts";
export { EvalTraceError, eventsOfTrace, readEvalTraces } from "./eval-trace.ts";
export { type WatchEvent, WatchOutcome, WatchSource, watchEventSchema } from "./events.ts";
export { createWatchReporter, type WatchReporter, type WatchReporterOptions } from "./reporter.ts";
export { DEFAULT_MAX_RUN_EVENTS, type RunRecord, type RunTotals } from "./run-record.ts";
export { RunStore, type RunStoreOptions, WatchRunFileError } from "./run-store.ts";
export {
  DEFAULT_WATCH_DIR,
  DEFAULT_WATCH_PORT,
  type RunningWatchServer,
  type StartWatchServerOptions,
  startWatchServer,
} from "./server.ts";
export { renderStatechart, type StatechartGraph, type StatechartState, statechartOf } from "./statechart.ts";
export {
  createWatchTransport,
  openWatchRun,
  WatchReportError,
  type WatchRun,
  type WatchTransport,
  type WatchTransportOptions,
} from "./transport.ts";
export {
  replayWatchedTrace,
  traceOfRun,
  type WatchedRunTrace,
  WatchReplayError,
  type WatchReplayResult,
} from "./watched-trace.ts";
export { createWorkerWatch, type WatchedQueuedRun, watchRunIdOf } from "./worker-watch.ts";
