/**
 * The watch server's routes (Hono): the runs list and a run page, their live streams (SSE), a
 * run's events as JSON, and the endpoint sources POST events to.
 */
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { type SSEStreamingApi, streamSSE } from "hono/streaming";
import { z } from "zod";
import { runIdSchema, watchBatchSchema } from "./events.ts";
import { renderRunPage, renderRunsPage, runRows, runUpdate } from "./pages.ts";
import type { RunRecord } from "./run-record.ts";
import type { RunStore } from "./run-store.ts";
import { traceOfRun } from "./watched-trace.ts";

/** Options of `createWatchApp`. */
export interface WatchAppOptions {
  store: RunStore;
  /**
   * `Host` header values the server answers (e.g. `127.0.0.1:4141`); other requests get 403, so a
   * web page cannot reach the server through a rebound DNS name. Unset: any host.
   */
  allowedHosts?: readonly string[];
}

/** The largest report body accepted (a batch of events, long histories included). */
const MAX_REPORT_BYTES = 16 * 1024 * 1024;

/** How often the runs list is sent again while runs report events. */
const LIST_UPDATE_MS = 200;

const fromSchema = z.coerce.number().int().min(0).default(0);

/** SSE streams wait here until the browser goes away. */
function untilAborted(stream: SSEStreamingApi, unsubscribe: () => void): Promise<void> {
  return new Promise((resolve) => {
    stream.onAbort(() => {
      unsubscribe();
      resolve();
    });
  });
}

/**
 * The watch app over a run store.
 * @example
 * const app = createWatchApp({ store: new RunStore(".forge/runs") });
 */
export function createWatchApp(options: WatchAppOptions): Hono {
  const { store } = options;
  const app = new Hono();

  if (options.allowedHosts !== undefined) {
    const allowed = new Set(options.allowedHosts);
    app.use(async (context, next) => {
      const host = context.req.header("host") ?? "";
      if (!allowed.has(host)) {
        return context.text(
          `Host '${host}' is not served here: open the watch server by the address it printed (${[...allowed].join(", ")}).`,
          403,
        );
      }
      await next();
    });
  }

  // One report is a batch of events; a body past this is refused before it is read whole.
  app.use(
    "/api/runs/*",
    bodyLimit({
      maxSize: MAX_REPORT_BYTES,
      onError: (context) => context.json({ error: `a report is at most ${MAX_REPORT_BYTES} bytes` }, 413),
    }),
  );

  // Browsers ask for one; no icon, and no 404 in their console.
  app.get("/favicon.ico", (context) => context.body(null, 204));

  app.get("/", (context) => context.html(renderRunsPage(store.list(), store.dir)));

  app.get("/stream", (context) =>
    streamSSE(context, async (stream) => {
      // At most one list update per LIST_UPDATE_MS: a busy proxy reports many events a second.
      let pending: ReturnType<typeof setTimeout> | undefined;
      const unsubscribe = store.subscribe(() => {
        pending ??= setTimeout(() => {
          pending = undefined;
          void stream.writeSSE({ event: "runs", data: JSON.stringify({ rows: runRows(store.list()) }) });
        }, LIST_UPDATE_MS);
      });
      stream.onAbort(() => clearTimeout(pending));
      await untilAborted(stream, unsubscribe);
    }),
  );

  app.get("/runs/:runId", (context) => {
    const record = store.get(context.req.param("runId"));
    if (record === undefined) return context.text(`No run '${context.req.param("runId")}' here.`, 404);
    return context.html(renderRunPage(record));
  });

  app.get("/runs/:runId/events.json", (context) => {
    const record = store.get(context.req.param("runId"));
    if (record === undefined) return context.json({ error: "no such run" }, 404);
    return context.json({ runId: record.runId, events: record.events });
  });

  // The run in the eval's trace format (replayable with replayWatchedTrace and its workflow).
  app.get("/runs/:runId/trace.json", (context) => {
    const record = store.get(context.req.param("runId"));
    if (record === undefined) return context.json({ error: "no such run" }, 404);
    return context.json(traceOfRun(record));
  });

  app.get("/runs/:runId/stream", (context) => {
    const runId = context.req.param("runId");
    const record = store.get(runId);
    if (record === undefined) return context.text(`No run '${runId}' here.`, 404);
    const from = fromSchema.safeParse(context.req.query("from"));
    if (!from.success) return context.text("from: a whole number of events already shown", 400);
    return streamSSE(context, async (stream) => {
      const send = (current: RunRecord, first: number) =>
        stream.writeSSE({ event: "update", data: JSON.stringify(runUpdate(current, first)) });
      // Subscribed before anything is awaited: events a POST appends meanwhile are not lost, and a
      // client gone during the first write still unsubscribes. The backlog is sent from `from`
      // (what the page rendered) up to the current end; later events come through the subscription.
      const sentUpTo = record.events.length;
      const unsubscribe = store.subscribe((changed, firstNew) => {
        if (changed.runId === runId) void send(changed, Math.max(firstNew, sentUpTo));
      });
      const aborted = untilAborted(stream, unsubscribe);
      if (sentUpTo > from.data) await send(record, from.data);
      await aborted;
    });
  });

  app.post("/api/runs/:runId/events", async (context) => {
    const runId = runIdSchema.safeParse(context.req.param("runId"));
    if (!runId.success) return context.json({ error: runId.error.issues[0]?.message }, 400);
    if (!(context.req.header("content-type") ?? "").startsWith("application/json")) {
      return context.json({ error: "send the events as application/json" }, 415);
    }
    let body: unknown;
    try {
      body = await context.req.json();
    } catch {
      return context.json({ error: "the body is not JSON" }, 400);
    }
    const batch = watchBatchSchema.safeParse(body);
    if (!batch.success) {
      return context.json({ error: `not a batch of watch events: ${z.prettifyError(batch.error)}` }, 400);
    }
    const record = store.append(runId.data, batch.data.events);
    return context.json({ runId: record.runId, events: record.events.length });
  });

  return app;
}
