/**
 * The OpenTelemetry observer against a real backend: Arize Phoenix (PyPI's `arize-phoenix`,
 * installed into `.cache/phoenix` by `npm run setup:phoenix` / the test setup) started on a free
 * loopback port, fed over OTLP/HTTP by `startOtlpExport` (the batch processor `forge proxy
 * --otel-endpoint` uses). A guarded workflow run with nudges and a rescue, a proxy request (under
 * its client's `traceparent`, its call rescued from text) and a queued run parked for approval and
 * resumed by a second worker with its own exporter (as another process) are read back through
 * Phoenix's REST API: names, parents, attributes and events as stored.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa, type ResultPromise } from "execa";
import getPort from "get-port";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { phoenixCommand, setupPhoenix } from "../../scripts/setup-phoenix.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { formatTraceparent, type OtelObserver, otelObserver, startOtlpExport } from "../../src/otel/index.ts";
import { createProxy } from "../../src/proxy/app.ts";
import { createEmbeddedQueue, defineRegistry, type RunQueue, startWorker } from "../../src/queue/index.ts";
import { ScriptedClient, text, toolCall } from "../../src/testing/index.ts";
import { paymentsScript, paymentsWorkflow } from "../fixtures/approval/payments.ts";
import { createPassthrough, weatherWorkflow } from "../helpers/workflows.ts";
import { createFakeBackend } from "../proxy/helpers/fake-backend.ts";

interface StoredSpan {
  name: string;
  context: { trace_id: string; span_id: string };
  parent_id: string | null;
  span_kind: string;
  attributes: Record<string, unknown>;
  events: { name: string; attributes: Record<string, unknown> }[];
}

let phoenix: ResultPromise | undefined;
let url = "";
let workDir = "";

beforeAll(async () => {
  await setupPhoenix(() => {});
  workDir = mkdtempSync(join(tmpdir(), "forge-phoenix-"));
  const port = await getPort({ host: "127.0.0.1" });
  const grpcPort = await getPort({ host: "127.0.0.1" });
  url = `http://127.0.0.1:${port}`;
  phoenix = execa(phoenixCommand(), ["serve"], {
    env: {
      PHOENIX_WORKING_DIR: workDir,
      PHOENIX_HOST: "127.0.0.1",
      PHOENIX_PORT: String(port),
      PHOENIX_GRPC_PORT: String(grpcPort),
      PHOENIX_TELEMETRY_ENABLED: "false",
    },
    reject: false,
    all: true,
  });
  // Phoenix migrates its SQLite database first: under load that takes a minute or more.
  const deadline = Date.now() + 240_000;
  for (;;) {
    const ready = await fetch(`${url}/healthz`).then(
      (response) => response.ok,
      () => false,
    );
    if (ready) break;
    if (phoenix.exitCode !== null || Date.now() > deadline) {
      phoenix.kill();
      throw new Error(`Phoenix did not start on ${url}: ${((await phoenix).all ?? "").slice(-2000)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}, 1_800_000);

afterAll(async () => {
  phoenix?.kill("SIGTERM");
  await phoenix;
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

/** The spans Phoenix stored in trace `traceId`, once it holds at least `expected` of them. */
async function storedSpans(expected: number, traceId?: string): Promise<StoredSpan[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const response = await fetch(`${url}/v1/projects/default/spans?limit=1000`);
    if (!response.ok) throw new Error(`Phoenix span query: HTTP ${response.status} ${await response.text()}`);
    const { data } = (await response.json()) as { data: StoredSpan[] };
    const ofTrace = traceId === undefined ? data : data.filter((span) => span.context.trace_id === traceId);
    if (ofTrace.length >= expected || Date.now() > deadline) return ofTrace;
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

const randomHex = (bytes: number) =>
  Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (byte) =>
    byte.toString(16).padStart(2, "0"),
  ).join("");

describe("otelObserver → OTLP/HTTP → Phoenix", () => {
  it("stores a guarded run's invoke_agent, chat and execute_tool spans with their guardrail events", async () => {
    const otlp = await startOtlpExport({ endpoint: url, metrics: false, serviceName: "forge-test" });
    const observer = otelObserver({
      tracer: otlp.tracer,
      meter: otlp.meter,
      model: "sim-model",
      recordContent: true,
    });
    const runner = new WorkflowRunner({
      client: new ScriptedClient([
        text('{"tool": "get_forecast", "args": {"city": "Paris"}}'),
        toolCall("report_weather", { city: "Paris", weather: "sunny" }),
        text('Sure! <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'),
        toolCall("report_weather", { city: "Paris", weather: "sunny" }),
      ]),
      contextManager: createPassthrough(),
      observers: [observer],
    });
    await runner.run(weatherWorkflow().workflow, "Weather in Paris?", {
      promptVars: { user: "Ada" },
      runId: "phoenix-run",
    });
    await otlp.shutdown();

    const spans = await storedSpans(7);
    const run = spans.find((span) => span.name === "invoke_agent weather");
    expect(run).toBeDefined();
    expect(run?.parent_id).toBeNull();
    expect(run?.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "weather",
    });
    const ofRun = spans.filter((span) => span.context.trace_id === run?.context.trace_id);
    expect(ofRun.map((span) => span.name).sort()).toEqual([
      "chat sim-model",
      "chat sim-model",
      "chat sim-model",
      "chat sim-model",
      "execute_tool get_weather",
      "execute_tool report_weather",
      "invoke_agent weather",
    ]);
    for (const child of ofRun.filter((span) => span !== run)) {
      expect(child.parent_id).toBe(run?.context.span_id);
    }
    const chat = ofRun.find((span) => span.name === "chat sim-model");
    expect(chat?.span_kind).toBe("LLM");
    expect(chat?.attributes).toMatchObject({ "gen_ai.request.model": "sim-model" });
    const tool = ofRun.find((span) => span.name === "execute_tool get_weather");
    expect(tool?.span_kind).toBe("TOOL");
    expect(tool?.attributes).toMatchObject({ "gen_ai.tool.name": "get_weather" });
    expect(run?.events.map((event) => event.name)).toEqual(["forge.nudge", "forge.nudge", "forge.rescue"]);
    expect(run?.events.map((event) => event.attributes["forge.nudge.kind"])).toEqual([
      "retry",
      "step",
      undefined,
    ]);
  }, 120_000);

  it("stores a proxy request's span under its client's traceparent, with the rescue", async () => {
    const otlp = await startOtlpExport({ endpoint: url, metrics: false, serviceName: "forge-proxy-test" });
    const observer = otelObserver({ tracer: otlp.tracer, meter: otlp.meter });
    const app = createProxy({
      backend: createFakeBackend([
        text('<tool_call>{"name": "search", "arguments": {"query": "xstate"}}</tool_call>'),
      ]),
      observeRequest: observer.observeRequest,
    });
    const traceId = randomHex(16);
    const clientSpan = randomHex(8);
    const response = await app.request("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json", traceparent: `00-${traceId}-${clientSpan}-01` },
      body: JSON.stringify({
        model: "qwen-proxy",
        messages: [{ role: "user", content: "find xstate" }],
        tools: [
          {
            type: "function",
            function: {
              name: "search",
              description: "Search",
              parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
            },
          },
        ],
      }),
    });
    expect(response.status).toBe(200);
    const requestId = response.headers.get("x-request-id");
    await otlp.shutdown();

    const spans = await storedSpans(2, traceId);
    const request = spans.find((span) => span.name === "invoke_agent proxy");
    expect(request?.parent_id).toBe(clientSpan);
    expect(request?.attributes).toMatchObject({
      "gen_ai.agent.name": "proxy",
      "gen_ai.request.model": "qwen-proxy",
      "forge.request.id": requestId,
    });
    expect(request?.events.map((event) => event.name)).toEqual(["forge.rescue"]);
    const chat = spans.find((span) => span.name.startsWith("chat"));
    expect(chat?.parent_id).toBe(request?.context.span_id);
  }, 120_000);

  it("stores a queued run parked by one worker and resumed by another as one trace under its producer", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-phoenix-queue-"));
    const queue = await createEmbeddedQueue({ dir: join(dir, "queue") });
    const worker = (observer: OtelObserver, script: ReturnType<typeof paymentsScript>, on: RunQueue) =>
      startWorker({
        queue: on,
        registry: defineRegistry({
          workflows: [paymentsWorkflow(dir)],
          runner: new WorkflowRunner({
            client: new ScriptedClient(script),
            contextManager: { maybeCompact: (messages) => messages },
          }),
        }),
        pollMs: 20,
        observers: () => [observer],
        tracing: observer,
      });
    try {
      // The producer's span, e.g. the request that enqueued the run.
      const producer = await startOtlpExport({
        endpoint: url,
        metrics: false,
        serviceName: "forge-producer",
      });
      const enqueueSpan = producer.tracer.startSpan("POST /payments");
      await queue.enqueue("payments", "Pay B2 250", {
        runId: "phoenix-queued",
        traceparent: formatTraceparent(enqueueSpan.spanContext()),
      });
      enqueueSpan.end();
      await producer.shutdown();
      const { traceId, spanId: producerSpan } = enqueueSpan.spanContext();

      // Worker A parks the run; worker B, with its own exporter, resumes it after the approval.
      const first = await startOtlpExport({ endpoint: url, metrics: false, serviceName: "forge-worker-a" });
      const workerA = worker(
        otelObserver({ tracer: first.tracer, meter: first.meter }),
        paymentsScript(),
        queue,
      );
      for (let i = 0; (await queue.get("phoenix-queued"))?.status !== "awaiting_approval"; i++) {
        if (i > 500) throw new Error("the run never parked");
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await workerA.close();
      await first.shutdown();
      await queue.approve("phoenix-queued");
      const second = await startOtlpExport({ endpoint: url, metrics: false, serviceName: "forge-worker-b" });
      const workerB = worker(
        otelObserver({ tracer: second.tracer, meter: second.meter }),
        paymentsScript().slice(1),
        queue,
      );
      expect(await queue.result("phoenix-queued")).toBe("paid");
      await workerB.close();
      await second.shutdown();

      const spans = await storedSpans(8, traceId);
      const runs = spans.filter((span) => span.name === "invoke_agent payments");
      expect(runs).toHaveLength(2);
      const parkedRun = runs.find((span) => span.parent_id === producerSpan);
      const resumedRun = runs.find((span) => span.parent_id === parkedRun?.context.span_id);
      expect(parkedRun?.attributes).toMatchObject({ "forge.run.resumed": false });
      expect(parkedRun?.events.map((event) => event.name)).toContain("forge.approval.parked");
      expect(resumedRun?.attributes).toMatchObject({ "forge.run.resumed": true });
      expect(resumedRun?.events.map((event) => event.name)).toContain("forge.approval.decided");
      const tools = spans.filter((span) => span.name.startsWith("execute_tool")).map((span) => span.name);
      expect(tools.sort()).toEqual([
        "execute_tool finish",
        "execute_tool lookup",
        "execute_tool notify",
        "execute_tool transfer",
      ]);
    } finally {
      await queue.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
