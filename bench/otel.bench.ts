/**
 * OpenTelemetry observer overhead (`npm run bench:otel`), in one process, A/B interleaved:
 *
 * - `step`: a weather workflow of `--steps` lookups (a ScriptedClient, no I/O) run with no observer
 *   and with `otelObserver` on an SDK tracer whose spans go to a batch processor with an exporter
 *   that drops them (and an SDK meter with no reader): the loop's CPU time per step, both ways.
 * - `proxy`: sequential tool requests through `createProxy` (in-process `app.request`) to a
 *   loopback node:http backend answering a tool call at once, with no observer and with
 *   `observeRequest` on the batch processor: time per request, both ways.
 *
 * The observer's own time is also read directly: each of its hooks is timed as it is called (the
 * loop's `step` figure is CPU time of the whole process, which the machine's other work can move;
 * the time spent inside the hooks is what the observer adds, whatever else runs).
 *
 * Options: --steps N (200), --runs N (30 per side), --requests N (300 per side), --rounds N (5).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import { WorkflowRunner } from "../src/loop/runner.ts";
import { otelObserver } from "../src/otel/index.ts";
import { createHttpBackend } from "../src/proxy/backend/http-backend.ts";
import { createProxy } from "../src/proxy/index.ts";
import { ScriptedClient, toolCall } from "../src/testing/index.ts";
import { createPassthrough, weatherWorkflow } from "../test/helpers/workflows.ts";

const { values: args } = parseArgs({
  options: {
    steps: { type: "string", default: "200" },
    runs: { type: "string", default: "30" },
    requests: { type: "string", default: "300" },
    rounds: { type: "string", default: "5" },
  },
});
const steps = Number(args.steps);
const runs = Number(args.runs);
const requests = Number(args.requests);
const rounds = Number(args.rounds);

const dropping: SpanExporter = {
  export: (_spans, done) => done({ code: 0 }),
  shutdown: async () => {},
};
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropping)] });
const tracer = tracerProvider.getTracer("bench");
const meter = new MeterProvider().getMeter("bench");
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

// ── step ───────────────────────────────────────────────────────────────────────────────────────
/** Milliseconds spent inside the observer's hooks, per hook, in the current round. */
const inside = new Map<string, number>();

/** The observer with each hook timed into `inside`. */
function timed(observer: ReturnType<typeof otelObserver>): ReturnType<typeof otelObserver> {
  const wrapped: Record<string, unknown> = { ...observer };
  for (const [name, hook] of Object.entries(observer)) {
    if (typeof hook !== "function" || !name.startsWith("on")) continue;
    wrapped[name] = (...args: unknown[]) => {
      const started = performance.now();
      try {
        return (hook as (...a: unknown[]) => unknown)(...args);
      } finally {
        inside.set(name, (inside.get(name) ?? 0) + performance.now() - started);
      }
    };
  }
  return wrapped as unknown as ReturnType<typeof otelObserver>;
}

async function stepRound(observed: boolean): Promise<number> {
  const { workflow } = weatherWorkflow();
  const script = () => [
    ...Array.from({ length: steps - 1 }, (_, index) => toolCall("get_weather", { city: `City ${index}` })),
    toolCall("report_weather", { city: "Paris", weather: "sunny" }),
  ];
  const observers = observed ? [timed(otelObserver({ tracer, meter, model: "bench" }))] : [];
  const started = process.cpuUsage();
  for (let run = 0; run < runs; run += 1) {
    const runner = new WorkflowRunner({
      client: new ScriptedClient(script()),
      contextManager: createPassthrough(),
      maxIterations: steps + 5,
      observers,
    });
    await runner.run(workflow, "Weather?", { promptVars: { user: "Ada" } });
  }
  const used = process.cpuUsage(started);
  return (used.user + used.system) / 1000 / (runs * steps);
}

// ── proxy ──────────────────────────────────────────────────────────────────────────────────────
const answer = JSON.stringify({
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 0,
  model: "bench",
  choices: [
    {
      index: 0,
      finish_reason: "tool_calls",
      message: {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_1",
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Paris"}' },
          },
        ],
      },
    },
  ],
  usage: { prompt_tokens: 50, completion_tokens: 10, total_tokens: 60 },
});
const backendServer = createServer((request, response) => {
  request.resume();
  request.on("end", () => {
    if (request.url?.startsWith("/props")) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { "content-type": "application/json" }).end(answer);
  });
});
await new Promise<void>((resolve) => backendServer.listen(0, "127.0.0.1", resolve));
const backendUrl = `http://127.0.0.1:${(backendServer.address() as AddressInfo).port}`;
const body = JSON.stringify({
  model: "bench",
  messages: [{ role: "user", content: "Weather in Paris?" }],
  tools: [
    {
      type: "function",
      function: {
        name: "get_weather",
        description: "Current weather",
        parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      },
    },
  ],
});
const observer = otelObserver({ tracer, meter });
const apps = {
  none: createProxy({ backend: createHttpBackend({ url: backendUrl }) }),
  otel: createProxy({
    backend: createHttpBackend({ url: backendUrl }),
    observeRequest: observer.observeRequest,
  }),
};

async function proxyRound(kind: keyof typeof apps): Promise<number> {
  const app = apps[kind];
  const started = performance.now();
  for (let index = 0; index < requests; index += 1) {
    const response = await app.request("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    if (response.status !== 200)
      throw new Error(`proxy answered ${response.status}: ${await response.text()}`);
    await response.text();
  }
  return (performance.now() - started) / requests;
}

// Warm-up, then interleaved rounds.
await stepRound(false);
await stepRound(true);
await proxyRound("none");
await proxyRound("otel");
const stepTimes = { none: [] as number[], otel: [] as number[] };
// Microseconds per step inside the observer's hooks, per round.
const insideTimes: number[] = [];
const proxyTimes = { none: [] as number[], otel: [] as number[] };
for (let round = 0; round < rounds; round += 1) {
  stepTimes.none.push(await stepRound(false));
  inside.clear();
  stepTimes.otel.push(await stepRound(true));
  insideTimes.push(([...inside.values()].reduce((a, b) => a + b, 0) / (runs * steps)) * 1000);
  proxyTimes.none.push(await proxyRound("none"));
  proxyTimes.otel.push(await proxyRound("otel"));
}
await tracerProvider.shutdown();
backendServer.close();

const stepNone = median(stepTimes.none);
const stepOtel = median(stepTimes.otel);
const proxyNone = median(proxyTimes.none);
const proxyOtel = median(proxyTimes.otel);
console.log(`bench:otel — ${rounds} interleaved rounds, medians (Node ${process.version})`);
console.log(
  `step  (${runs} runs × ${steps} steps): no observer ${stepNone.toFixed(4)} ms CPU/step, otelObserver ${stepOtel.toFixed(4)} ms (${(((stepOtel - stepNone) / stepNone) * 100).toFixed(1)} %; target < 5 %)`,
);
console.log(
  `      inside the observer's hooks: ${median(insideTimes).toFixed(1)} µs/step (${((median(insideTimes) / 1000 / stepNone) * 100).toFixed(1)} % of a step without it)`,
);
console.log(
  `proxy (${requests} requests): no observer ${proxyNone.toFixed(3)} ms/request, observeRequest + batch exporter ${proxyOtel.toFixed(3)} ms (+${(proxyOtel - proxyNone).toFixed(3)} ms; target < 1 ms)`,
);
