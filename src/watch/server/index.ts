/** The watch server: its routes and pages over HTTP, the runs it keeps on disk, eval traces and watched runs as traces. */
export { createWatchApp, type WatchAppOptions } from "./app.ts";
export { EvalTraceError, eventsOfTrace, readEvalTraces } from "./eval-trace.ts";
export { RunStore, type RunStoreOptions, WatchRunFileError } from "./run-store.ts";
export {
  DEFAULT_WATCH_DIR,
  DEFAULT_WATCH_PORT,
  type RunningWatchServer,
  type StartWatchServerOptions,
  startWatchServer,
} from "./server.ts";
export {
  replayWatchedTrace,
  traceOfRun,
  type WatchedRunTrace,
  WatchReplayError,
  type WatchReplayResult,
} from "./watched-trace.ts";
