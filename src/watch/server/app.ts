/**
 * The watch server's routes (Hono): the runs list and a run page, their live streams (SSE, each
 * update only what is new, at most a bounded amount waiting per reader), a run's events as JSON,
 * and the endpoint sources POST events to (with the server's token).
 */
import type { Context } from "hono";
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { getCookie, setCookie } from "hono/cookie";
import { type SSEStreamingApi, streamSSE } from "hono/streaming";
import { z } from "zod";
import { runIdSchema, watchBatchSchema } from "../report/index.ts";
import {
  applyWatchEvent,
  createRunRecord,
  renderRunPage,
  renderRunsPage,
  runRows,
  runUpdate,
} from "../view/index.ts";
import { bearerToken, tokenCookieName, tokenMatches } from "./access.ts";
import { jsonDepthExceeds, MAX_REPORT_DEPTH } from "./json-depth.ts";
import type { RunStore } from "./run-store.ts";
import { BoundedSender, DEFAULT_SUBSCRIBER_BUFFER_BYTES, sseMessage } from "./subscriber.ts";
import { traceOfRun } from "./watched-trace.ts";

/** Options of `createWatchApp`. */
export interface WatchAppOptions {
  store: RunStore;
  /**
   * The token a source sends (`Authorization: Bearer <token>`) to post events; without it a post
   * gets 401. `startWatchServer` makes a random one.
   */
  token: string;
  /**
   * Reading runs (pages, streams, JSON) needs the token too: as the `Authorization` header, as
   * `?token=` (the page then keeps it in a cookie) or that cookie. `startWatchServer` sets it when
   * listening beyond loopback. Default false.
   */
  tokenToRead?: boolean;
  /**
   * `Host` header values the server answers (e.g. `127.0.0.1:4141`); other requests get 403, so a
   * web page cannot reach the server through a rebound DNS name. Unset: any host.
   */
  allowedHosts?: readonly string[];
  /**
   * How many bytes of updates a live stream may have waiting for its reader (default 4 MiB); a
   * reader further behind is dropped (its stream closed; a browser reconnects and catches up).
   */
  maxSubscriberBytes?: number;
  /** Told of a dropped reader (default: one line on stderr). */
  onWarning?: (message: string) => void;
}

/** The largest report body accepted (a batch of events, long histories included). */
const MAX_REPORT_BYTES = 16 * 1024 * 1024;

/** How often the runs list is sent again while runs report events. */
const LIST_UPDATE_MS = 200;

const sinceSchema = z.coerce.number().int().min(0).default(0);

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
  const { store, token } = options;
  const maxSubscriberBytes = options.maxSubscriberBytes ?? DEFAULT_SUBSCRIBER_BUFFER_BYTES;
  const warn = options.onWarning ?? ((message: string) => process.stderr.write(`forge watch: ${message}\n`));
  const cookie = tokenCookieName(token);
  const app = new Hono();

  if (options.allowedHosts !== undefined) {
    const allowed = new Set(options.allowedHosts.map((host) => host.toLowerCase()));
    app.use(async (context, next) => {
      const host = context.req.header("host") ?? "";
      if (!allowed.has(host.toLowerCase())) {
        return context.text(
          `Host '${host}' is not served here: open the watch server by the address it printed (${[...allowed].join(", ")}).`,
          403,
        );
      }
      await next();
    });
  }

  // Posting events always needs the token, in a header (never a cookie: a page elsewhere cannot send it).
  app.use("/api/*", async (context, next) => {
    if (!tokenMatches(token, bearerToken(context.req.header("authorization")))) {
      context.header("WWW-Authenticate", 'Bearer realm="forge watch"');
      return context.json(
        {
          error:
            "send the watch server's token (Authorization: Bearer <token>): give the reporter the URL forge watch printed, with its ?token=",
        },
        401,
      );
    }
    await next();
  });

  // Reading needs the token when the server listens beyond loopback; a page opened with ?token= keeps it in a cookie.
  app.use(async (context, next) => {
    context.header("Referrer-Policy", "no-referrer");
    if (context.req.path.startsWith("/api/") || context.req.path === "/favicon.ico") return next();
    const query = context.req.query("token");
    if (tokenMatches(token, query)) {
      setCookie(context, cookie, token, { httpOnly: true, sameSite: "Strict", path: "/" });
    }
    if (options.tokenToRead !== true) return next();
    const given = bearerToken(context.req.header("authorization")) ?? query ?? getCookie(context, cookie);
    if (!tokenMatches(token, given)) {
      return context.text("This watch server needs its token: open the URL it printed (…/?token=…).", 401);
    }
    return next();
  });

  // One report is a batch of events; a body past this is refused before it is read whole.
  app.use(
    "/api/runs/*",
    bodyLimit({
      maxSize: MAX_REPORT_BYTES,
      onError: (context) => context.json({ error: `a report is at most ${MAX_REPORT_BYTES} bytes` }, 413),
    }),
  );

  /** A bounded sender on a stream; dropping its reader also ends its connection. */
  const senderOn = (context: Context, stream: SSEStreamingApi, what: string) =>
    new BoundedSender(stream, maxSubscriberBytes, (waiting) => {
      warn(
        `dropped a slow reader of ${what}: ${waiting} bytes of updates waited, more than ${maxSubscriberBytes}`,
      );
      (context.env as { outgoing?: { destroy?: () => void } } | undefined)?.outgoing?.destroy?.();
    });

  // Browsers ask for one; no icon, and no 404 in their console.
  app.get("/favicon.ico", (context) => context.body(null, 204));

  app.get("/", (context) => context.html(renderRunsPage(store.list(), store.dir)));

  app.get("/stream", (context) =>
    streamSSE(context, async (stream) => {
      const sender = senderOn(context, stream, "the runs list");
      // At most one list update per LIST_UPDATE_MS: a busy proxy reports many events a second.
      let pending: ReturnType<typeof setTimeout> | undefined;
      const unsubscribe = store.subscribe(() => {
        pending ??= setTimeout(() => {
          pending = undefined;
          sender.send(sseMessage("runs", JSON.stringify({ rows: runRows(store.list()) })));
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
    return context.json({ runId: record.runId, events: store.allEvents(record) });
  });

  // The run in the eval's trace format (replayable with replayWatchedTrace and its workflow).
  app.get("/runs/:runId/trace.json", (context) => {
    const record = store.get(context.req.param("runId"));
    if (record === undefined) return context.json({ error: "no such run" }, 404);
    if (record.dropped === 0) return context.json(traceOfRun(record));
    // Older events are no longer in memory: the whole run is read again from its file.
    const whole = createRunRecord(record.runId);
    for (const event of store.allEvents(record)) applyWatchEvent(whole, event);
    return context.json(traceOfRun(whole));
  });

  // Live updates of a run after the `since` events the page shows (Last-Event-ID on a reconnect):
  // each update holds only the events that are new to this reader.
  app.get("/runs/:runId/stream", (context) => {
    const runId = context.req.param("runId");
    const record = store.get(runId);
    if (record === undefined) return context.text(`No run '${runId}' here.`, 404);
    const since = sinceSchema.safeParse(
      context.req.header("last-event-id") ?? context.req.query("since") ?? context.req.query("from"),
    );
    if (!since.success) return context.text("since: a whole number of events already shown", 400);
    return streamSSE(context, async (stream) => {
      const sender = senderOn(context, stream, `run ${runId}`);
      let sentUpTo = since.data;
      const sendNew = () => {
        const update = runUpdate(record, sentUpTo);
        sentUpTo = update.count;
        sender.send(sseMessage("update", JSON.stringify(update), update.count));
      };
      // Subscribed before anything is awaited: events a POST appends meanwhile are not lost.
      const unsubscribe = store.subscribe((changed) => {
        if (changed === record) sendNew();
      });
      const aborted = untilAborted(stream, unsubscribe);
      if (record.eventCount !== sentUpTo) sendNew();
      await aborted;
    });
  });

  app.post("/api/runs/:runId/events", async (context) => {
    const runId = runIdSchema.safeParse(context.req.param("runId"));
    if (!runId.success) return context.json({ error: runId.error.issues[0]?.message }, 400);
    if (!(context.req.header("content-type") ?? "").startsWith("application/json")) {
      return context.json({ error: "send the events as application/json" }, 415);
    }
    const text = await context.req.text();
    // Checked before parsing: a body nested thousands deep would overflow the stack further on.
    if (jsonDepthExceeds(text, MAX_REPORT_DEPTH)) {
      return context.json(
        { error: `the body nests objects and arrays deeper than ${MAX_REPORT_DEPTH}` },
        400,
      );
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return context.json({ error: "the body is not JSON" }, 400);
    }
    const batch = watchBatchSchema.safeParse(body);
    if (!batch.success) {
      return context.json({ error: `not a batch of watch events: ${z.prettifyError(batch.error)}` }, 400);
    }
    const record = store.append(runId.data, batch.data.events);
    // Shown live, but the run's file could not take them (a full disk): the source hears of it.
    if (record.writeError !== null) {
      return context.json({ error: record.writeError, runId: record.runId, events: record.eventCount }, 507);
    }
    return context.json({ runId: record.runId, events: record.eventCount });
  });

  return app;
}
