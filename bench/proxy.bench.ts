/**
 * Proxy benchmark (`npm run bench:proxy`), loopback only: in one run, the same requests go to a
 * fast local backend directly and through the proxy, and the proxy's added latency (p50/p99),
 * relative throughput and RSS growth over many requests are printed as Markdown.
 *
 * Five processes: the backend (a node:http server answering an OpenAI tool call, after
 * `--think-ms` to stand in for a model), the proxy (`startProxy` + `createHttpBackend`), a bare
 * node:http forwarder (the floor: what any Node proxy adds here), a bare Hono forwarder (the
 * framework floor: what the proxy's HTTP layer adds before any of its own work), and this one
 * running autocannon. Latencies are taken from every response at microsecond resolution
 * (autocannon's own histogram rounds to whole milliseconds). Bounded by request count and time.
 *
 * Options: --requests N (per measured phase, default 10000), --connections N (32),
 * --think-ms N (backend delay; default runs 0 and 100), --jitter-ms N (spread each non-zero delay
 * uniformly over think ± N ms, as a model's answer times vary, instead of answering every request
 * after the same delay; default 0), --rss-requests N (20000), --profile DIR (write the proxy
 * process's CPU profile there).
 *
 * `--limits` measures the limits and deadlines instead (each scenario with a fresh proxy at its
 * defaults): the proxy's peak RSS while a backend offers a 300 MB answer, and while 32 clients
 * send 9 MiB requests at once; and the time from a backend that stalls mid-body to the client's
 * 504 (or stream error event) under `--idle-timeout-ms N` (default 1000), over `--stall-runs N` (10);
 * `--only huge|bodies|stall` runs one of the three, `--clients N` sets the concurrent requests of
 * `bodies` (32), `--proxy-node-options "…"` sets the proxy process's NODE_OPTIONS; `--proxy-options JSON` overrides `startProxy` options in every scenario (e.g. `{"maxBodyMemoryBytes": 0}`).
 */
import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import autocannon from "autocannon";

const SELF = fileURLToPath(import.meta.url);
const MAX_PHASE_SECONDS = 120;
const RSS_SAMPLE_EVERY = 5_000;

const { values: args } = parseArgs({
  options: {
    role: { type: "string", default: "main" },
    requests: { type: "string", default: "10000" },
    connections: { type: "string", default: "32" },
    "think-ms": { type: "string", multiple: true },
    "jitter-ms": { type: "string", default: "0" },
    "rss-requests": { type: "string", default: "20000" },
    "backend-url": { type: "string" },
    profile: { type: "string" },
    limits: { type: "boolean", default: false },
    "idle-timeout-ms": { type: "string", default: "1000" },
    "stall-runs": { type: "string", default: "10" },
    "proxy-options": { type: "string" },
    only: { type: "string" },
    clients: { type: "string", default: "32" },
    "proxy-node-options": { type: "string" },
  },
});

const MIB = 1024 * 1024;

const TOOLS = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Current weather for a city",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    },
  },
  {
    type: "function",
    function: {
      name: "get_forecast",
      description: "Forecast for a city",
      parameters: {
        type: "object",
        properties: { city: { type: "string" }, days: { type: "integer" } },
        required: ["city"],
      },
    },
  },
];

const GUARDED_BODY = JSON.stringify({
  model: "bench-model",
  temperature: 0.2,
  messages: [
    { role: "system", content: "You are a weather assistant. Use the tools." },
    { role: "user", content: "What is the weather in Paris?" },
  ],
  tools: TOOLS,
});

const PLAIN_BODY = JSON.stringify({
  model: "bench-model",
  messages: [{ role: "user", content: "Say hello." }],
});

/** Answer the main process's `stats` messages with this process's memory and CPU time. */
function answerStats(options: { collectFirst?: boolean } = {}): void {
  process.on("message", (message: { type: string }) => {
    if (message.type !== "stats") return;
    if (options.collectFirst) {
      globalThis.gc?.();
      globalThis.gc?.();
    }
    const cpu = process.cpuUsage();
    process.send?.({
      type: "stats",
      ...process.memoryUsage(),
      cpuMicros: cpu.user + cpu.system,
      maxRssBytes: peakRssBytes(),
    } satisfies Stats);
  });
}

/**
 * This process's own peak resident set: `VmHWM` in /proc/self/status (Linux), or null elsewhere.
 * Not `process.resourceUsage().maxRSS`: Linux carries that across fork and exec, so a child forked
 * by a large parent reports the parent's size (after the guarded 9 MiB scenario, the main process
 * holds about 600 MB, which the next proxy reported as its own peak).
 */
function peakRssBytes(): number | null {
  let status: string;
  try {
    status = readFileSync("/proc/self/status", "utf8");
  } catch {
    return null;
  }
  const kib = /^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1];
  return kib === undefined ? null : Number(kib) * 1024;
}

/** The proxy's peak RSS for a --limits line; it needs /proc/self/status. */
function peakOf(stats: Stats): number {
  if (stats.maxRssBytes === null) {
    throw new Error("--limits reads the proxy's peak RSS from /proc/self/status (VmHWM): run it on Linux");
  }
  return stats.maxRssBytes;
}

// ── backend role ────────────────────────────────────────────────────────────────────────────
async function runBackend(): Promise<void> {
  const thinkMs = Number(process.env.THINK_MS ?? "0");
  const jitterMs = Number(process.env.JITTER_MS ?? "0");
  // Spread delays come from a fixed-seed generator, so every run sees the same delays in the same order.
  let state = 12_345;
  const delay = () => {
    if (jitterMs === 0) return thinkMs;
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return thinkMs + jitterMs * (2 * (state / 2_147_483_648) - 1);
  };
  const toolAnswer = Buffer.from(
    JSON.stringify({
      id: "chatcmpl-bench",
      object: "chat.completion",
      created: 0,
      model: "bench-model",
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: null,
            tool_calls: [
              {
                id: "call_0",
                type: "function",
                function: { name: "get_weather", arguments: '{"city":"Paris"}' },
              },
            ],
          },
          finish_reason: "tool_calls",
        },
      ],
      usage: { prompt_tokens: 40, completion_tokens: 10, total_tokens: 50 },
    }),
  );
  const textAnswer = Buffer.from(
    JSON.stringify({
      id: "chatcmpl-bench",
      object: "chat.completion",
      created: 0,
      model: "bench-model",
      choices: [{ index: 0, message: { role: "assistant", content: "Hello!" }, finish_reason: "stop" }],
    }),
  );
  const props = Buffer.from(JSON.stringify({ default_generation_settings: { n_ctx: 8192 } }));
  // --limits: a backend that misbehaves on its chat answers (the /props answer stays normal).
  const mode = process.env.BACKEND_MODE ?? "normal";
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      if (mode !== "normal" && request.url === "/v1/chat/completions") return misbehave(mode, response);
      const body = Buffer.concat(chunks);
      const answer = request.url === "/props" ? props : body.includes('"tools"') ? toolAnswer : textAnswer;
      const send = () => {
        response.writeHead(200, { "content-type": "application/json", "content-length": answer.length });
        response.end(answer);
      };
      if (thinkMs > 0) setTimeout(send, delay());
      else send();
    });
  });
  server.keepAliveTimeout = 60_000;
  answerStats();
  server.listen(0, "127.0.0.1", () => {
    process.send?.({ type: "ready", url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  });
}

/** Stall after part of a JSON or SSE body, or send 300 MB as fast as the proxy reads it. */
async function misbehave(mode: string, response: import("node:http").ServerResponse): Promise<void> {
  if (mode === "stall") {
    response.writeHead(200, { "content-type": "application/json" });
    response.write('{"id":"chatcmpl-stalled","object":"chat.completion","choices":[');
    return;
  }
  if (mode === "stall-sse") {
    response.writeHead(200, { "content-type": "text/event-stream" });
    response.write(
      'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}\n\n',
    );
    return;
  }
  response.writeHead(200, { "content-type": "application/json" });
  const piece = Buffer.alloc(MIB, "a");
  let closed = false;
  let wake = () => {};
  response.once("close", () => {
    closed = true;
    wake();
  });
  response.on("drain", () => wake());
  for (let sent = 0; sent < 300 * MIB && !closed; sent += MIB) {
    if (!response.write(piece)) await new Promise<void>((resolve) => (wake = resolve));
  }
  if (!closed) response.end();
}

// ── proxy role ──────────────────────────────────────────────────────────────────────────────
async function runProxyRole(): Promise<void> {
  const { createHttpBackend } = await import("../src/proxy/backend/http-backend.ts");
  const { startProxy } = await import("../src/proxy/server.ts");
  const proxy = await startProxy({
    backend: createHttpBackend({
      url: args["backend-url"] as string,
      toolMode: "native",
      ...(process.env.IDLE_TIMEOUT_MS && { idleTimeoutMs: Number(process.env.IDLE_TIMEOUT_MS) }),
    }),
    host: "127.0.0.1",
    port: 0,
    // --limits: proxy options for one scenario, e.g. {"maxBodyMemoryBytes": 10485760}.
    ...(process.env.PROXY_OPTIONS && JSON.parse(process.env.PROXY_OPTIONS)),
  });
  process.once("SIGINT", () => process.exit(0));
  // Memory after two forced GCs, so a sample shows what is kept, not what awaits collection.
  answerStats({ collectFirst: true });
  process.send?.({ type: "ready", url: proxy.url });
}

// ── forwarder role: the floor ────────────────────────────────────────────────────────────────
/**
 * The least any Node proxy can do: a bare node:http server that streams each request to the
 * backend over a keep-alive pool and streams the answer back — no framework, no parsing, no
 * guardrails. Its added latency is the floor for this machine and this load.
 */
async function runForwarderRole(): Promise<void> {
  const { request: httpRequest, Agent } = await import("node:http");
  const target = new URL(args["backend-url"] as string);
  const agent = new Agent({ keepAlive: true, scheduling: "lifo" });
  const server = createServer((incoming, outgoing) => {
    const upstream = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: incoming.url,
        method: incoming.method,
        headers: incoming.headers,
        agent,
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    upstream.on("error", () => {
      outgoing.writeHead(502);
      outgoing.end();
    });
    incoming.pipe(upstream);
  });
  server.keepAliveTimeout = 60_000;
  process.once("SIGINT", () => process.exit(0));
  answerStats();
  server.listen(0, "127.0.0.1", () => {
    process.send?.({ type: "ready", url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  });
}

// ── Hono forwarder role: the framework floor ─────────────────────────────────────────────────
/**
 * What the proxy's HTTP layer costs before any of its own work: a Hono app on @hono/node-server
 * (as the proxy is) whose one route reads the body from the socket, sends it to the backend over
 * a keep-alive node:http pool and answers with a web `Response` of the backend's bytes — no JSON
 * parsing, no validation, no guardrails.
 */
async function runHonoForwarderRole(): Promise<void> {
  const { Hono } = await import("hono");
  const { serve } = await import("@hono/node-server");
  const { request: httpRequest, Agent } = await import("node:http");
  const target = new URL(args["backend-url"] as string);
  const agent = new Agent({ keepAlive: true, scheduling: "lifo" });
  const app = new Hono<{ Bindings: { incoming: import("node:http").IncomingMessage } }>();
  app.post("*", async (c) => {
    const chunks: Buffer[] = [];
    for await (const chunk of c.env.incoming) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const answer = await new Promise<{ status: number; type: string; body: Buffer }>((resolve, reject) => {
      const upstream = httpRequest(
        {
          host: target.hostname,
          port: target.port,
          path: c.req.path,
          method: "POST",
          agent,
          headers: { "content-type": "application/json", "content-length": body.length },
        },
        (response) => {
          const parts: Buffer[] = [];
          response.on("data", (part: Buffer) => parts.push(part));
          response.on("end", () =>
            resolve({
              status: response.statusCode ?? 502,
              type: response.headers["content-type"] ?? "application/json",
              body: Buffer.concat(parts),
            }),
          );
          response.on("error", reject);
        },
      );
      upstream.on("error", reject);
      upstream.end(body);
    });
    return new Response(new Uint8Array(answer.body), {
      status: answer.status,
      headers: { "content-type": answer.type },
    });
  });
  process.once("SIGINT", () => process.exit(0));
  answerStats();
  const server = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, (info) => {
    process.send?.({ type: "ready", url: `http://127.0.0.1:${info.port}` });
  });
  server.on("error", (error) => {
    throw error;
  });
}

// ── main role ───────────────────────────────────────────────────────────────────────────────
/** What the proxy process reports about itself. */
interface Stats extends NodeJS.MemoryUsage {
  type: "stats";
  cpuMicros: number;
  /** Peak resident set size since the process started. */
  /** Peak resident set of the process itself (VmHWM), null where /proc is missing. */
  maxRssBytes: number | null;
}

interface Phase {
  latencies: Float64Array;
  count: number;
  non2xx: number;
  errors: number;
  seconds: number;
}

async function load(url: string, body: string, amount: number, connections: number): Promise<Phase> {
  const latencies = new Float64Array(amount + connections);
  let count = 0;
  let non2xx = 0;
  let finish: (result: autocannon.Result) => void = () => {};
  let fail: (error: unknown) => void = () => {};
  const done = new Promise<autocannon.Result>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  const instance = autocannon(
    {
      url,
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      connections,
      amount,
      timeout: 30,
    },
    (error: unknown, result: autocannon.Result) => (error ? fail(error) : finish(result)),
  );
  // autocannon ends on its 1-second tick: time the phase from the first send to the last answer.
  const started = process.hrtime.bigint();
  let lastAnswer = started;
  instance.on("response", (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
    lastAnswer = process.hrtime.bigint();
    if (statusCode >= 200 && statusCode < 300) latencies[count++] = responseTime;
    else non2xx++;
  });
  const stopper = setTimeout(() => instance.stop(), MAX_PHASE_SECONDS * 1000);
  const result = await done;
  clearTimeout(stopper);
  const seconds = Number(lastAnswer - started) / 1e9;
  return {
    latencies: latencies.slice(0, count),
    count,
    non2xx,
    errors: result.errors + result.timeouts,
    seconds,
  };
}

function percentile(sorted: Float64Array, fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] as number;
}

function summarize(phases: Phase[]) {
  const all = new Float64Array(phases.reduce((sum, phase) => sum + phase.count, 0));
  let offset = 0;
  for (const phase of phases) {
    all.set(phase.latencies, offset);
    offset += phase.count;
  }
  all.sort();
  const seconds = phases.reduce((sum, phase) => sum + phase.seconds, 0);
  return {
    p50: percentile(all, 0.5),
    p99: percentile(all, 0.99),
    rps: all.length / seconds,
    failures: phases.reduce((sum, phase) => sum + phase.non2xx + phase.errors, 0),
  };
}

async function statsOf(child: ChildProcess): Promise<Stats> {
  child.send({ type: "stats" });
  return firstMessage<Stats>(child, "stats");
}

function startChild(role: string, extra: string[], env: Record<string, string> = {}): ChildProcess {
  const profile =
    (role === "proxy" || role === "hono-forwarder") && args.profile
      ? ["--cpu-prof", `--cpu-prof-dir=${args.profile}`]
      : [];
  return fork(SELF, ["--role", role, ...extra], {
    execArgv: ["--import", "tsx", "--expose-gc", ...profile],
    env: { ...process.env, ...env },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
}

async function firstMessage<T>(child: ChildProcess, type?: string): Promise<T> {
  for (;;) {
    const [message] = (await once(child, "message")) as [T & { type?: string }];
    if (type === undefined || message.type === type) return message;
  }
}

async function measure(thinkMs: number, requests: number, connections: number, rssRequests: number) {
  const backend = startChild("backend", [], { THINK_MS: String(thinkMs), JITTER_MS: args["jitter-ms"] });
  const { url: backendUrl } = await firstMessage<{ url: string }>(backend, "ready");
  const proxyChild = startChild("proxy", ["--backend-url", backendUrl]);
  const { url: proxyUrl } = await firstMessage<{ url: string }>(proxyChild, "ready");
  const forwarderChild = startChild("forwarder", ["--backend-url", backendUrl]);
  const { url: forwarderUrl } = await firstMessage<{ url: string }>(forwarderChild, "ready");
  const honoChild = startChild("hono-forwarder", ["--backend-url", backendUrl]);
  const { url: honoUrl } = await firstMessage<{ url: string }>(honoChild, "ready");
  const direct = `${backendUrl}/v1/chat/completions`;
  const proxied = `${proxyUrl}/v1/chat/completions`;
  const forwarded = `${forwarderUrl}/v1/chat/completions`;
  const honoForwarded = `${honoUrl}/v1/chat/completions`;
  try {
    // Warm both paths (JIT, connection pools, the tool-spec cache).
    await load(direct, GUARDED_BODY, 2_000, connections);
    await load(proxied, GUARDED_BODY, 4_000, connections);
    await load(proxied, PLAIN_BODY, 2_000, connections);
    await load(forwarded, GUARDED_BODY, 2_000, connections);
    await load(honoForwarded, GUARDED_BODY, 2_000, connections);
    // Alternate halves so drift in machine load hits both sides alike.
    const half = Math.ceil(requests / 2);
    const rows: Record<string, ReturnType<typeof summarize> & { cpuPerRequest?: number }> = {};
    for (const [name, body] of [
      ["guarded", GUARDED_BODY],
      ["plain", PLAIN_BODY],
    ] as const) {
      const directPhases: Phase[] = [];
      const proxyPhases: Phase[] = [];
      const floorPhases: Phase[] = [];
      const honoPhases: Phase[] = [];
      let proxyCpu = 0;
      let floorCpu = 0;
      let honoCpu = 0;
      let backendCpu = 0;
      for (let round = 0; round < 2; round++) {
        const backendBefore = await statsOf(backend);
        directPhases.push(await load(direct, body, half, connections));
        backendCpu += (await statsOf(backend)).cpuMicros - backendBefore.cpuMicros;
        const cpuBefore = await statsOf(proxyChild);
        proxyPhases.push(await load(proxied, body, half, connections));
        proxyCpu += (await statsOf(proxyChild)).cpuMicros - cpuBefore.cpuMicros;
        const floorBefore = await statsOf(forwarderChild);
        floorPhases.push(await load(forwarded, body, half, connections));
        floorCpu += (await statsOf(forwarderChild)).cpuMicros - floorBefore.cpuMicros;
        const honoBefore = await statsOf(honoChild);
        honoPhases.push(await load(honoForwarded, body, half, connections));
        honoCpu += (await statsOf(honoChild)).cpuMicros - honoBefore.cpuMicros;
      }
      rows[`${name}.direct`] = { ...summarize(directPhases), cpuPerRequest: backendCpu / (2 * half) };
      rows[`${name}.proxy`] = { ...summarize(proxyPhases), cpuPerRequest: proxyCpu / (2 * half) };
      rows[`${name}.floor`] = { ...summarize(floorPhases), cpuPerRequest: floorCpu / (2 * half) };
      rows[`${name}.hono`] = { ...summarize(honoPhases), cpuPerRequest: honoCpu / (2 * half) };
    }
    // RSS over many guarded requests, sampled every 5000 to tell a plateau from a leak. The last
    // phase above was forwarded requests, which leave V8 a smaller heap: one round of guarded ones
    // first, so the baseline is a process that has served this kind of request, not V8 growing its
    // heap back to what guarded requests need (a one-off step, not growth).
    if (rssRequests > 0) await load(proxied, GUARDED_BODY, RSS_SAMPLE_EVERY, connections);
    const before = await statsOf(proxyChild);
    const samples: number[] = [before.rss];
    const rssPhase: Phase = { latencies: new Float64Array(0), count: 0, non2xx: 0, errors: 0, seconds: 0 };
    for (let sent = 0; sent < rssRequests; sent += RSS_SAMPLE_EVERY) {
      const phase = await load(
        proxied,
        GUARDED_BODY,
        Math.min(RSS_SAMPLE_EVERY, rssRequests - sent),
        connections,
      );
      rssPhase.count += phase.count;
      rssPhase.non2xx += phase.non2xx;
      rssPhase.errors += phase.errors;
      samples.push((await statsOf(proxyChild)).rss);
    }
    const after = await statsOf(proxyChild);
    return { rows, before, after, rssPhase, samples };
  } finally {
    // SIGINT lets a profiled proxy write its profile before it exits.
    proxyChild.kill("SIGINT");
    forwarderChild.kill("SIGINT");
    honoChild.kill("SIGINT");
    backend.kill();
    await once(proxyChild, "exit");
  }
}

/** CPU per call of the guarded path's in-process parts, to show where a request's time goes. */
async function measureParts(): Promise<string[]> {
  const { createWorkflowMachine } = await import("../src/machines/workflow.machine.ts");
  const { runInference } = await import("../src/loop/inference.ts");
  const { chatCompletionRequestSchema } = await import("../src/proxy/openai/schema.ts");
  const { convertOpenAI } = await import("../src/proxy/openai/request.ts");
  const { respondTool } = await import("../src/tools/respond.ts");
  const { request } = convertOpenAI(chatCompletionRequestSchema.parse(JSON.parse(GUARDED_BODY)));
  const tools = [...request.tools, respondTool().spec];
  const answer = [{ tool: "get_weather", args: { city: "Paris" } }];
  const client = {
    apiFormat: "openai" as const,
    send: async () => answer,
    sendStream: async function* () {},
    getContextLength: async () => null,
  };
  const contextManager = { maybeCompact: <T>(messages: T) => messages };
  const cpuPerCall = async (calls: number, body: () => unknown) => {
    for (let index = 0; index < 500; index++) await body();
    const before = process.cpuUsage();
    for (let index = 0; index < calls; index++) await body();
    const used = process.cpuUsage(before);
    return ((used.user + used.system) / calls / 1000).toFixed(3);
  };
  const parse = await cpuPerCall(5_000, () =>
    convertOpenAI(chatCompletionRequestSchema.parse(JSON.parse(GUARDED_BODY))),
  );
  const inference = await cpuPerCall(3_000, () =>
    runInference({ client, contextManager, messages: request.messages, tools, maxRetries: 3 }),
  );
  const machine = await cpuPerCall(3_000, () =>
    createWorkflowMachine({ client, contextManager, toolSpecs: tools }),
  );
  return [
    `parse + zod-validate + convert one guarded request: ${parse} ms CPU`,
    `runInference with an instant in-memory client (one actor of the machine built once per process, run to its answer, no I/O): ${inference} ms CPU; building the machine (createWorkflowMachine, once per process): ${machine} ms`,
  ];
}

/** "100 ms", or "100 ± 50 ms" with --jitter-ms. */
function delayLabel(thinkMs: number): string {
  const jitter = Number(args["jitter-ms"]);
  return thinkMs > 0 && jitter > 0 ? `${thinkMs} ± ${jitter} ms` : `${thinkMs} ms`;
}

async function main(): Promise<void> {
  const requests = Number(args.requests);
  const connections = Number(args.connections);
  const rssRequests = Number(args["rss-requests"]);
  const thinks = (args["think-ms"] ?? ["0", "100"]).map(Number);
  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
  const ms = (value: number) => value.toFixed(3);
  console.log(
    `Node ${process.version}, ${connections} connections, ${requests} requests per path and target, loopback.\n`,
  );
  console.log(
    "| backend delay | request | through | direct p50 / p99 (ms) | through p50 / p99 (ms) | added p50 / p99 (ms) | direct req/s | through req/s | through / direct | CPU per request: backend / through |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  const memory: string[] = [];
  for (const thinkMs of thinks) {
    const { rows, before, after, rssPhase, samples } = await measure(
      thinkMs,
      requests,
      connections,
      rssRequests,
    );
    for (const name of ["guarded", "plain"]) {
      const direct = rows[`${name}.direct`]!;
      const label = name === "guarded" ? "with tools (guarded)" : "without tools (forwarded)";
      for (const [target, through] of [
        ["proxy", "forge proxy"],
        ["floor", "bare node:http forwarder (floor)"],
        ["hono", "bare Hono forwarder (framework floor)"],
      ] as const) {
        const proxy = rows[`${name}.${target}`]!;
        console.log(
          `| ${delayLabel(thinkMs)} | ${label} | ${through} | ${ms(direct.p50)} / ${ms(direct.p99)} | ${ms(proxy.p50)} / ${ms(proxy.p99)} | ${ms(proxy.p50 - direct.p50)} / ${ms(proxy.p99 - direct.p99)} | ${direct.rps.toFixed(0)} | ${proxy.rps.toFixed(0)} | ${((100 * proxy.rps) / direct.rps).toFixed(1)} % | ${((direct.cpuPerRequest ?? 0) / 1000).toFixed(3)} / ${((proxy.cpuPerRequest ?? 0) / 1000).toFixed(3)} ms |`,
        );
        if (direct.failures + proxy.failures > 0) {
          console.log(
            `|  | failures: direct ${direct.failures}, ${target} ${proxy.failures} | | | | | | | | |`,
          );
        }
      }
    }
    memory.push(
      `backend delay ${delayLabel(thinkMs)}: proxy RSS ${mb(before.rss)} MB → ${mb(after.rss)} MB after ${rssPhase.count} guarded requests (growth ${mb(after.rss - before.rss)} MB; heap used ${mb(before.heapUsed)} → ${mb(after.heapUsed)} MB, heap total ${mb(before.heapTotal)} → ${mb(after.heapTotal)} MB, external ${mb(before.external)} → ${mb(after.external)} MB; ${rssPhase.non2xx + rssPhase.errors} failures; RSS every ${RSS_SAMPLE_EVERY}: ${samples.map(mb).join(", ")} MB)`,
    );
  }
  console.log("");
  for (const line of memory) console.log(`- ${line}`);
  for (const line of await measureParts()) console.log(`- ${line}`);
}

// ── --limits ────────────────────────────────────────────────────────────────────────────────
/** A backend in `mode` and a proxy at its defaults (plus `proxyEnv`) in front of it. */
async function startPair(mode: string, proxyEnv: Record<string, string> = {}) {
  const backend = startChild("backend", [], { BACKEND_MODE: mode });
  const { url: backendUrl } = await firstMessage<{ url: string }>(backend, "ready");
  const proxy = startChild("proxy", ["--backend-url", backendUrl], {
    ...(args["proxy-options"] && { PROXY_OPTIONS: args["proxy-options"] }),
    ...(args["proxy-node-options"] && { NODE_OPTIONS: args["proxy-node-options"] }),
    ...proxyEnv,
  });
  const { url } = await firstMessage<{ url: string }>(proxy, "ready");
  return {
    proxy,
    chat: `${url}/v1/chat/completions`,
    models: `${url}/v1/models`,
    async stop() {
      proxy.kill("SIGINT");
      backend.kill();
      await once(proxy, "exit");
    },
  };
}

function post(url: string, body: string): Promise<Response> {
  return fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
}

async function measureLimits(): Promise<void> {
  const mb = (bytes: number) => (bytes / MIB).toFixed(1);
  const lines: string[] = [];
  const runs = (scenario: string) => args.only === undefined || args.only === scenario;
  for (const [label, body] of runs("huge")
    ? ([
        ["forwarded", PLAIN_BODY],
        ["guarded", GUARDED_BODY],
      ] as const)
    : []) {
    const pair = await startPair("huge");
    const before = await statsOf(pair.proxy);
    const response = await post(pair.chat, body);
    const answer = (await response.json()) as { error?: { message?: string } };
    const after = await statsOf(pair.proxy);
    const alive = (await fetch(pair.models)).status;
    lines.push(
      `300 MB backend answer, ${label}: HTTP ${response.status} (${answer.error?.message}); proxy RSS ${mb(before.rss)} MB before, peak ${mb(peakOf(after))} MB; /v1/models afterwards: HTTP ${alive}`,
    );
    await pair.stop();
  }
  const filler = "a".repeat(9 * MIB - 400);
  for (const [label, tools] of runs("bodies")
    ? ([
        ["guarded", TOOLS],
        ["forwarded", undefined],
      ] as const)
    : []) {
    const pair = await startPair("normal");
    const before = await statsOf(pair.proxy);
    const body = JSON.stringify({
      model: "bench-model",
      messages: [{ role: "user", content: filler }],
      tools,
    });
    const statuses = await Promise.all(
      Array.from({ length: Number(args.clients) }, () => post(pair.chat, body).then((r) => r.status)),
    );
    const after = await statsOf(pair.proxy);
    const counts = new Map<number, number>();
    for (const status of statuses) counts.set(status, (counts.get(status) ?? 0) + 1);
    lines.push(
      `${args.clients} concurrent ${mb(body.length)} MiB requests, ${label}: ${[...counts].map(([status, count]) => `${count} × HTTP ${status}`).join(", ")}; proxy RSS ${mb(before.rss)} MB before, peak ${mb(peakOf(after))} MB`,
    );
    await pair.stop();
  }
  const idleMs = Number(args["idle-timeout-ms"]);
  const stallRuns = Number(args["stall-runs"]);
  for (const [label, mode, body] of runs("stall")
    ? ([
        ["forwarded JSON", "stall", PLAIN_BODY],
        ["guarded JSON", "stall", GUARDED_BODY],
        ["forwarded SSE", "stall-sse", JSON.stringify({ ...JSON.parse(PLAIN_BODY), stream: true })],
      ] as const)
    : []) {
    const pair = await startPair(mode, { IDLE_TIMEOUT_MS: String(idleMs) });
    const times: number[] = [];
    let outcome = "";
    for (let run = 0; run < stallRuns; run++) {
      const started = performance.now();
      const response = await post(pair.chat, body);
      const text = await response.text();
      times.push(performance.now() - started);
      outcome =
        mode === "stall-sse"
          ? `HTTP ${response.status}, error event: ${text.includes('"error"')}`
          : `HTTP ${response.status}`;
    }
    times.sort((a, b) => a - b);
    const median = times[Math.floor(times.length / 2)] as number;
    const max = times.at(-1) as number;
    lines.push(
      `backend stalls mid-body, ${label}, --idle-timeout ${idleMs} ms: ${outcome}; request to the client's ${mode === "stall-sse" ? "error event" : "504"} median ${median.toFixed(1)} ms, max ${max.toFixed(1)} ms over ${stallRuns} runs (idle timeout + ${(median - idleMs).toFixed(1)} / + ${(max - idleMs).toFixed(1)} ms)`,
    );
    await pair.stop();
  }
  console.log(`Node ${process.version}, loopback; each scenario with a fresh proxy at its defaults.\n`);
  for (const line of lines) console.log(`- ${line}`);
}

if (args.role === "backend") await runBackend();
else if (args.role === "proxy") await runProxyRole();
else if (args.role === "forwarder") await runForwarderRole();
else if (args.role === "hono-forwarder") await runHonoForwarderRole();
else if (args.limits) await measureLimits();
else await main();
