/**
 * Watch server benchmark (`npm run bench:watch`), loopback only: the viewer's RSS while one run
 * reports 100,000 events, in three scenarios, each with a fresh server in a child process (so its
 * RSS is the server's alone):
 *
 * - `page`: a run page's live stream open and read throughout (what a browser does); the bytes it
 *   received per batch are reported too.
 * - `stalled`: a live stream opened over a raw socket that is never read.
 * - `none`: no reader (the floor).
 *
 * Events are posted in batches (`--batch`, default 50) of tool calls and results with 300
 * characters of content each. The server's RSS is sampled every 100 ms (peak reported) and after
 * a forced GC at the end. Each scenario stops by itself after `--deadline-s` (default 35 s) and
 * the whole bench within about two minutes.
 *
 * Options: --events N (100000), --batch N (50), --deadline-s N (35), --only page|stalled|none.
 */
import { type ChildProcess, fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const SELF = fileURLToPath(import.meta.url);

const { values: args } = parseArgs({
  options: {
    role: { type: "string", default: "bench" },
    events: { type: "string", default: "100000" },
    batch: { type: "string", default: "50" },
    "deadline-s": { type: "string", default: "35" },
    only: { type: "string" },
    dir: { type: "string" },
  },
});

interface Ready {
  type: "ready";
  url: string;
  token: string;
  port: number;
}

/** The server's side: a watch server reporting its RSS (sampled, peak kept) and its warnings. */
async function serve(): Promise<void> {
  const { startWatchServer } = await import("../src/watch/index.ts");
  const warnings: string[] = [];
  let peak = 0;
  const sample = () => {
    peak = Math.max(peak, process.memoryUsage().rss);
  };
  setInterval(sample, 100).unref();
  const watch = await startWatchServer({
    port: 0,
    dir: args.dir as string,
    onWarning: (message) => warnings.push(message),
  });
  process.on("message", (message: { type: string }) => {
    if (message.type !== "stats") return;
    sample();
    globalThis.gc?.();
    const afterGc = process.memoryUsage().rss;
    process.send?.({ type: "stats", peak, afterGc, warnings });
  });
  process.send?.({ type: "ready", url: watch.url, token: watch.token, port: watch.port } satisfies Ready);
}

function startServer(dir: string): Promise<{ child: ChildProcess; ready: Ready }> {
  const child = fork(SELF, ["--role", "server", "--dir", dir], {
    execArgv: ["--import", "tsx", "--expose-gc"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  return new Promise((resolve, reject) => {
    child.once("message", (message: Ready) => resolve({ child, ready: message }));
    child.once("exit", (code) => reject(new Error(`the watch server exited (${code})`)));
  });
}

function stats(child: ChildProcess): Promise<{ peak: number; afterGc: number; warnings: string[] }> {
  return new Promise((resolve) => {
    child.once("message", resolve as (message: unknown) => void);
    child.send({ type: "stats" });
  });
}

function batchOf(start: number, size: number): unknown[] {
  return Array.from({ length: size }, (_, index) => {
    const number = start + index;
    return {
      type: "message.appended",
      at: number,
      message: {
        role: number % 2 === 0 ? "assistant" : "tool",
        content: `event ${number}: ${"lorem ipsum ".repeat(25)}`,
        metadata: { type: number % 2 === 0 ? "tool_call" : "tool_result" },
      },
    };
  });
}

const MB = 1024 * 1024;

async function scenario(kind: "page" | "stalled" | "none"): Promise<Record<string, string | number>> {
  const dir = mkdtempSync(join(tmpdir(), "forge-watch-bench-"));
  const { child, ready } = await startServer(dir);
  const total = Number(args.events);
  const size = Number(args.batch);
  const deadline = Date.now() + Number(args["deadline-s"]) * 1000;
  const headers = { "content-type": "application/json", authorization: `Bearer ${ready.token}` };
  const postBatch = (events: unknown[]) =>
    fetch(`${ready.url}/api/runs/bench/events`, {
      method: "POST",
      headers,
      body: JSON.stringify({ events }),
    });
  const started = {
    type: "run.started",
    at: 0,
    name: `bench ${kind}`,
    source: "runner",
    startedAt: Date.now(),
    statechart: null,
  };
  await postBatch([started]);

  let received = 0;
  let messages = 0;
  let largest = 0;
  let streamEnded = false;
  const reader = new AbortController();
  let socket: ReturnType<typeof connect> | null = null;
  if (kind === "page") {
    const response = await fetch(`${ready.url}/runs/bench/stream?since=1`, { signal: reader.signal });
    void (async () => {
      try {
        const decoder = new TextDecoder();
        let pending = "";
        const body = (response.body as ReadableStream<Uint8Array>).getReader();
        for (let read = await body.read(); !read.done; read = await body.read()) {
          const chunk = read.value;
          received += chunk.byteLength;
          pending += decoder.decode(chunk, { stream: true });
          for (let end = pending.indexOf("\n\n"); end !== -1; end = pending.indexOf("\n\n")) {
            messages += 1;
            largest = Math.max(largest, Buffer.byteLength(pending.slice(0, end + 2)));
            pending = pending.slice(end + 2);
          }
        }
      } catch {
        // aborted at the end
      }
      streamEnded = true;
    })();
  } else if (kind === "stalled") {
    socket = connect(ready.port, "127.0.0.1");
    socket.on("error", () => {});
    socket.on("close", () => {
      streamEnded = true;
    });
    socket.write(`GET /runs/bench/stream?since=1 HTTP/1.1\r\nHost: 127.0.0.1:${ready.port}\r\n\r\n`);
    socket.pause(); // never read: the kernel's buffers fill, then the server's
  }

  const begun = performance.now();
  let sent = 0;
  let stoppedEarly = false;
  while (sent < total) {
    if (Date.now() > deadline) {
      stoppedEarly = true;
      break;
    }
    const count = Math.min(size, total - sent);
    const response = await postBatch(batchOf(sent + 1, count));
    if (!response.ok) throw new Error(`POST: HTTP ${response.status} ${await response.text()}`);
    await response.arrayBuffer();
    sent += count;
  }
  const seconds = (performance.now() - begun) / 1000;
  // Let the page's reader catch up before measuring.
  if (kind === "page") await new Promise((resolve) => setTimeout(resolve, 500));
  const measured = await stats(child);
  reader.abort();
  socket?.destroy();
  child.kill();
  rmSync(dir, { recursive: true, force: true });
  return {
    scenario: kind,
    events: sent + 1,
    "stopped at deadline": stoppedEarly ? "yes" : "no",
    "posting (s)": seconds.toFixed(1),
    "events/s": Math.round(sent / seconds),
    "peak RSS (MB)": Math.round(measured.peak / MB),
    "RSS after GC (MB)": Math.round(measured.afterGc / MB),
    "SSE bytes received (MB)": kind === "page" ? (received / MB).toFixed(1) : "-",
    "SSE updates": kind === "page" ? messages : "-",
    "largest update (KB)": kind === "page" ? (largest / 1024).toFixed(1) : "-",
    "reader dropped":
      kind === "page"
        ? streamEnded
          ? "yes"
          : "no"
        : kind === "stalled"
          ? streamEnded || measured.warnings.some((line) => line.includes("dropped"))
            ? "yes"
            : "no"
          : "-",
    warnings: measured.warnings.length,
  };
}

async function main(): Promise<void> {
  if (args.role === "server") return serve();
  const hardStop = setTimeout(() => {
    process.stderr.write("bench:watch: past 150 s, stopping\n");
    process.exit(1);
  }, 150_000);
  hardStop.unref();
  const kinds = (args.only ? [args.only] : ["page", "stalled", "none"]) as ("page" | "stalled" | "none")[];
  const rows: Record<string, string | number>[] = [];
  for (const kind of kinds) rows.push(await scenario(kind));
  const columns = Object.keys(rows[0] ?? {});
  console.log(`Node ${process.version}, ${Number(args.events)} events in batches of ${args.batch}\n`);
  console.log(`| ${columns.join(" | ")} |`);
  console.log(`| ${columns.map(() => "---").join(" | ")} |`);
  for (const row of rows) console.log(`| ${columns.map((column) => row[column]).join(" | ")} |`);
  process.exit(0);
}

await main();
