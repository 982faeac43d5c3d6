/** The source side of the run viewer, run inside the watched process: the wire events, the transport and the reporters. */
export {
  runIdSchema,
  type TimelineCompaction,
  type TimelineExchange,
  type WatchEvent,
  WatchOutcome,
  WatchSource,
  watchBatchSchema,
  watchEventSchema,
} from "./events.ts";
export { createWatchReporter, type WatchReporter, type WatchReporterOptions } from "./reporter.ts";
export { type StatechartGraph, type StatechartState, statechartOf } from "./statechart-graph.ts";
export {
  createWatchTransport,
  describeThrown,
  openWatchRun,
  WatchReportError,
  type WatchRun,
  type WatchTransport,
  type WatchTransportOptions,
} from "./transport.ts";
export { createWorkerWatch, type WatchedQueuedRun, watchRunIdOf } from "./worker-watch.ts";
