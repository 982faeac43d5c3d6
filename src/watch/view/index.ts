/** The run viewer's drawing: a run's record folded from its events, its pages, timeline rows and statechart, as HTML and SVG. */
export { duration, escapeHtml } from "./format.ts";
export { renderRunPage, renderRunsPage, runRows, runUpdate } from "./pages.ts";
export {
  applyWatchEvent,
  createRunRecord,
  DEFAULT_MAX_RUN_EVENTS,
  type RunRecord,
  type RunTotals,
} from "./run-record.ts";
export { renderStatechart } from "./statechart.ts";
export {
  describeMessage,
  renderTimelineEvent,
  type TimelineEvent,
  type TimelineTrace,
  timelineEvents,
  timelineStrip,
} from "./timeline.ts";
