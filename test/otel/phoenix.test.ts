/**
 * The OpenTelemetry observer against a real backend: Arize Phoenix (PyPI's `arize-phoenix`,
 * installed into `.cache/phoenix` by `npm run setup:phoenix` / the test setup) started on a free
 * loopback port, fed over OTLP/HTTP by `startOtlpExport` (the batch processor `forge proxy
 * --otel-endpoint` uses). A guarded workflow run with nudges and a rescue, and a proxy request,
 * are read back through Phoenix's REST API: names, parents, attributes and events as stored.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa, type ResultPromise } from "execa";
import getPort from "get-port";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { phoenixCommand, setupPhoenix } from "../../scripts/setup-phoenix.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { otelObserver, startOtlpExport } from "../../src/otel/index.ts";
import { ScriptedClient, text, toolCall } from "../../src/testing/index.ts";
import { createPassthrough, weatherWorkflow } from "../helpers/workflows.ts";

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

async function storedSpans(expected: number): Promise<StoredSpan[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const response = await fetch(`${url}/v1/projects/default/spans?limit=1000`);
    if (!response.ok) throw new Error(`Phoenix span query: HTTP ${response.status} ${await response.text()}`);
    const { data } = (await response.json()) as { data: StoredSpan[] };
    if (data.length >= expected || Date.now() > deadline) return data;
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

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
});
