/**
 * The watch server's bounds: a live page gets only what is new, a reader that stops reading is
 * dropped, one run holds a bounded number of events in memory, deep JSON is a 400, a torn or
 * unwritable run file is not fatal, posting needs the token, and the Host check holds on 0.0.0.0.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  createWatchApp,
  createWatchTransport,
  RunStore,
  startWatchServer,
  type WatchEvent,
} from "../../../src/watch/index.ts";

const TOKEN = "bounds-token";

const started: WatchEvent = {
  type: "run.started",
  at: 0,
  name: "long run",
  source: "runner",
  startedAt: Date.parse("2026-01-01T00:00:00Z"),
  statechart: null,
};

/** A batch of `size` events at time `at`: tool calls and results with `content` of `width` characters. */
function batch(at: number, size: number, width = 40): WatchEvent[] {
  return Array.from({ length: size }, (_, index) => ({
    type: "message.appended",
    at: at + index,
    message: {
      role: index % 2 === 0 ? "assistant" : "tool",
      content: `${at}-${index} ${"x".repeat(width)}`,
      metadata: { type: index % 2 === 0 ? "tool_call" : "tool_result" },
    },
  })) as WatchEvent[];
}

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "forge-watch-bounds-"));
}

function post(
  app: ReturnType<typeof createWatchApp>,
  runId: string,
  body: unknown,
  token: string | null = TOKEN,
) {
  return app.request(`/api/runs/${runId}/events`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(token !== null && { authorization: `Bearer ${token}` }),
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** Reads whole SSE messages off a response body. */
function sseReader(response: Response) {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  return {
    /** The next message, as the text sent (its size is what the reader received for it). */
    async next(): Promise<string> {
      for (;;) {
        const end = buffer.indexOf("\n\n");
        if (end !== -1) {
          const message = buffer.slice(0, end + 2);
          buffer = buffer.slice(end + 2);
          return message;
        }
        const { done, value } = await reader.read();
        if (done) throw new Error("the stream ended");
        buffer += decoder.decode(value, { stream: true });
      }
    },
    /** Whether the stream ends within `reads` reads. */
    async ends(reads = 50): Promise<boolean> {
      for (let index = 0; index < reads; index++) if ((await reader.read()).done) return true;
      return false;
    },
    cancel: () => reader.cancel(),
  };
}

const dataOf = (message: string) =>
  JSON.parse(/^data: (.*)$/m.exec(message)?.[1] ?? "null") as {
    from: number;
    count: number;
    reset: boolean;
    rows: string[];
  };

describe("a run page's live stream", () => {
  it("sends each batch's new events only: bytes per batch stay flat as the timeline grows", async () => {
    const app = createWatchApp({ store: new RunStore(tempDir()), token: TOKEN });
    await post(app, "long", { events: [started] });
    const stream = sseReader(await app.request("/runs/long/stream?since=1"));
    const messages: string[] = [];
    for (let index = 0; index < 200; index++) {
      expect((await post(app, "long", { events: batch(10 * index, 4) })).status).toBe(200);
      messages.push(await stream.next());
    }
    await stream.cancel();
    // 800 events in: the 200th batch costs what the first did (the whole timeline would be ~40 times more).
    const sizes = messages.map((message) => Buffer.byteLength(message));
    const first = Math.max(...sizes.slice(0, 10));
    const last = Math.max(...sizes.slice(-10));
    expect(last).toBeLessThan(first * 1.5);
    expect(last).toBeLessThan(8_000);
    messages.forEach((message, index) => {
      const update = dataOf(message);
      expect(update).toMatchObject({ from: 1 + 4 * index, count: 5 + 4 * index, reset: false });
      expect(update.rows).toHaveLength(4);
    });
  });

  it("resumes after Last-Event-ID with what followed it, and resets a page behind what memory holds", async () => {
    const app = createWatchApp({ store: new RunStore(tempDir(), { maxRunEvents: 20 }), token: TOKEN });
    await post(app, "long", { events: [started, ...batch(0, 9)] });
    const resumed = sseReader(
      await app.request("/runs/long/stream?since=0", { headers: { "last-event-id": "6" } }),
    );
    expect(dataOf(await resumed.next())).toMatchObject({
      from: 6,
      count: 10,
      reset: false,
      rows: expect.any(Array),
    });
    await resumed.cancel();

    for (let index = 1; index <= 10; index++) await post(app, "long", { events: batch(100 * index, 10) });
    const behind = sseReader(await app.request("/runs/long/stream?since=3"));
    const update = dataOf(await behind.next());
    await behind.cancel();
    expect(update.reset).toBe(true);
    expect(update.count).toBe(110);
    expect(update.rows.length).toBeLessThanOrEqual(20 + 20 / 8);
  });
});

describe("a reader that stops reading", () => {
  it("is dropped past the buffer bound, with a line logged, instead of being queued for", async () => {
    const warnings: string[] = [];
    const app = createWatchApp({
      store: new RunStore(tempDir()),
      token: TOKEN,
      maxSubscriberBytes: 64 * 1024,
      onWarning: (message) => warnings.push(message),
    });
    await post(app, "long", { events: [started] });
    const stalled = await app.request("/runs/long/stream?since=1");
    // Never read while the run goes on: each batch is about 4 KB of rows.
    for (let index = 0; index < 60; index++) await post(app, "long", { events: batch(10 * index, 4, 1000) });
    expect(warnings).toEqual([
      expect.stringMatching(/dropped a slow reader of run long: \d+ bytes .* more than 65536/),
    ]);
    await expect(sseReader(stalled).ends()).resolves.toBe(true);
    // The run goes on for everyone else.
    expect((await post(app, "long", { events: batch(9000, 2) })).status).toBe(200);
  });
});

describe("a reader on a real socket that stops reading", () => {
  it("is dropped once the socket's buffers and the bound fill, and its connection is ended", async () => {
    const warnings: string[] = [];
    const watch = await startWatchServer({
      port: 0,
      dir: tempDir(),
      maxSubscriberBytes: 256 * 1024,
      onWarning: (message) => warnings.push(message),
    });
    const socket = connect(watch.port, "127.0.0.1");
    try {
      const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
      socket.on("error", () => {});
      const headers = { "content-type": "application/json", authorization: `Bearer ${watch.token}` };
      const postEvents = (events: WatchEvent[]) =>
        fetch(`${watch.url}/api/runs/long/events`, {
          method: "POST",
          headers,
          body: JSON.stringify({ events }),
        });
      await postEvents([started]);
      socket.write(`GET /runs/long/stream?since=1 HTTP/1.1\r\nHost: 127.0.0.1:${watch.port}\r\n\r\n`);
      socket.pause();
      // About 17 KB an update; the kernel's buffers take some megabytes before the server's fill.
      for (let index = 0; index < 3000 && warnings.length === 0; index++) {
        expect((await postEvents(batch(10 * index, 4, 4000))).status).toBe(200);
      }
      expect(warnings).toEqual([expect.stringContaining("dropped a slow reader of run long")]);
      // What the kernel already holds comes out, then the end: the server closed the connection.
      socket.resume();
      await closed;
    } finally {
      socket.destroy();
      await watch.close();
    }
  }, 60_000);
});

describe("a run's memory", () => {
  it("holds the newest maxRunEvents events, keeps totals of all, and serves every event from the file", async () => {
    const dir = tempDir();
    const store = new RunStore(dir, { maxRunEvents: 100 });
    const app = createWatchApp({ store, token: TOKEN });
    await post(app, "long", { events: [started] });
    const exchange: WatchEvent = {
      type: "llm.called",
      at: 1,
      durationMs: 5,
      promptTokens: 10,
      completionTokens: 2,
      response: { content: "hi" },
      error: null,
    };
    for (let index = 0; index < 100; index++)
      await post(app, "long", { events: [...batch(index, 9), exchange] });
    const record = store.get("long");
    expect(record?.eventCount).toBe(1001);
    expect(record?.events.length).toBeLessThanOrEqual(100 + 100 / 8);
    expect((record?.dropped ?? 0) + (record?.events.length ?? 0)).toBe(1001);
    expect(record?.totals).toMatchObject({ calls: 100, promptTokens: 1000, ms: 500 });
    const page = await (await app.request("/runs/long")).text();
    expect(page).toContain("100 LLM calls");
    expect(page).toMatch(/The first \d+ of 1001 events are not shown/);
    const { events } = (await (await app.request("/runs/long/events.json")).json()) as {
      events: WatchEvent[];
    };
    expect(events).toHaveLength(1001);
    const trace = (await (await app.request("/runs/long/trace.json")).json()) as { exchanges: unknown[] };
    expect(trace.exchanges).toHaveLength(100);
  });
});

describe("a posted body", () => {
  it("nested 20,000 deep is a 400, before it is parsed; a normal one still passes", async () => {
    const app = createWatchApp({ store: new RunStore(tempDir()), token: TOKEN });
    const deep = `{"events":[${"[".repeat(20_000)}${"]".repeat(20_000)}]}`;
    const refused = await post(app, "deep", deep);
    expect(refused.status).toBe(400);
    await expect(refused.json()).resolves.toMatchObject({ error: expect.stringContaining("deeper than 64") });
    const nested = { ...started, name: "nested" };
    expect((await post(app, "deep", { events: [nested] })).status).toBe(200);
  });
});

describe("run files", () => {
  it("load past a torn last line with a warning, and the next event starts a line of its own", () => {
    const dir = tempDir();
    const file = join(dir, "torn.jsonl");
    writeFileSync(file, `${JSON.stringify(started)}\n{"type":"state.entered","at":3,"sta`);
    const warnings: string[] = [];
    const store = new RunStore(dir, { onWarning: (message) => warnings.push(message) });
    expect(store.get("torn")?.events).toEqual([started]);
    expect(warnings).toEqual([expect.stringMatching(/torn\.jsonl, line 2: not JSON .*skipped/)]);

    const entered: WatchEvent = { type: "state.entered", at: 5, state: "b", iteration: 1 };
    store.append("torn", [entered]);
    const reopened = new RunStore(dir, { onWarning: () => {} });
    expect(reopened.get("torn")?.events).toEqual([started, entered]);
    expect(readFileSync(file, "utf8").split("\n").at(-2)).toBe(JSON.stringify(entered));
  });

  it("that cannot be written (a full disk) are reported to the source and logged once; the server goes on", async () => {
    const dir = tempDir();
    const warnings: string[] = [];
    const store = new RunStore(dir, { onWarning: (message) => warnings.push(message) });
    const app = createWatchApp({ store, token: TOKEN });
    // A directory where the run's file would be: every append fails, as on a full disk.
    mkdirSync(join(dir, "full.jsonl"));
    const first = await post(app, "full", { events: [started] });
    expect(first.status).toBe(507);
    await expect(first.json()).resolves.toMatchObject({
      error: expect.stringContaining("could not write 1 event"),
    });
    expect((await post(app, "full", { events: batch(1, 2) })).status).toBe(507);
    expect(warnings).toHaveLength(1);
    expect(store.get("full")?.eventCount).toBe(3);
    await expect((await app.request("/runs/full")).text()).resolves.toContain("Not recorded on disk");
    expect((await post(app, "fine", { events: [started] })).status).toBe(200);
  });
});

describe("the token", () => {
  it("is required to post events: 401 without it or with another, and it is never taken from a cookie", async () => {
    const app = createWatchApp({ store: new RunStore(tempDir()), token: TOKEN });
    const missing = await post(app, "run-1", { events: [started] }, null);
    expect(missing.status).toBe(401);
    await expect(missing.json()).resolves.toMatchObject({ error: expect.stringContaining("token") });
    expect((await post(app, "run-1", { events: [started] }, "guess")).status).toBe(401);
    const cookie = await app.request("/api/runs/run-1/events", {
      method: "POST",
      headers: { "content-type": "application/json", cookie: `token=${TOKEN}` },
      body: JSON.stringify({ events: [started] }),
    });
    expect(cookie.status).toBe(401);
    expect((await post(app, "run-1", { events: [started] })).status).toBe(200);
    // On loopback, reading needs no token.
    expect((await app.request("/runs/run-1/events.json")).status).toBe(200);
  });

  it("travels from a reporter's URL (?token=) as a header, never in the URL posted to", async () => {
    const calls: { url: string; headers: Record<string, string> }[] = [];
    const transport = createWatchTransport({
      url: "http://127.0.0.1:4141/?token=abc123",
      fetch: (async (url: string, init: RequestInit) => {
        calls.push({ url, headers: init.headers as Record<string, string> });
        return new Response("{}");
      }) as typeof fetch,
    });
    transport.post("run-1", [started]);
    await transport.flush();
    expect(transport.url).toBe("http://127.0.0.1:4141");
    expect(calls).toEqual([
      {
        url: "http://127.0.0.1:4141/api/runs/run-1/events",
        headers: expect.objectContaining({ authorization: "Bearer abc123" }),
      },
    ]);
  });
});

describe("a server on 0.0.0.0", () => {
  it("checks the Host and needs the token to read; the printed URL carries it", async () => {
    const watch = await startWatchServer({ host: "0.0.0.0", port: 0, dir: tempDir() });
    try {
      expect(watch.tokenUrl).toBe(`http://0.0.0.0:${watch.port}/?token=${watch.token}`);
      expect(watch.token).toMatch(/^[\w-]{32}$/);
      const local = `http://127.0.0.1:${watch.port}`;
      const rebound = await watch.app.request("/", { headers: { host: `evil.example:${watch.port}` } });
      expect(rebound.status).toBe(403);
      expect((await fetch(`${local}/`)).status).toBe(401);
      const opened = await fetch(`${local}/?token=${watch.token}`);
      expect(opened.status).toBe(200);
      const cookie = (opened.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
      expect(cookie).toMatch(/^forge_watch_\w+=/);
      expect((await fetch(`${local}/`, { headers: { cookie } })).status).toBe(200);
      const posted = await fetch(`${local}/api/runs/r1/events`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${watch.token}` },
        body: JSON.stringify({ events: [started] }),
      });
      expect(posted.status).toBe(200);
    } finally {
      await watch.close();
    }
  });
});
