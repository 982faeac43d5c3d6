/**
 * `npm run docs:phoenix-screenshot`: the picture in docs/guides/tracing-with-opentelemetry.md.
 * Starts Arize Phoenix (`npm run setup:phoenix` installs it) on a free loopback port, sends it one
 * guarded weather run with a retry nudge, a step nudge and a rescue (the same run as
 * test/otel/phoenix.test.ts, through `startOtlpExport`), and has headless Chromium (the system's
 * `chromium`, or `CHROMIUM=<path>`) take a screenshot of the run's trace page.
 *
 * Options: --out <png> (docs/otel-phoenix.png), --width/--height of the window (1600×1000).
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { execa } from "execa";
import getPort from "get-port";
import { WorkflowRunner } from "../src/loop/runner.ts";
import { otelObserver, startOtlpExport } from "../src/otel/index.ts";
import { ScriptedClient, text, toolCall } from "../src/testing/index.ts";
import { createPassthrough, weatherWorkflow } from "../test/helpers/workflows.ts";
import { phoenixCommand, setupPhoenix } from "./setup-phoenix.ts";

const root = fileURLToPath(new URL("../", import.meta.url));
const { values: args } = parseArgs({
  options: {
    out: { type: "string", default: join(root, "docs", "otel-phoenix.png") },
    width: { type: "string", default: "1600" },
    height: { type: "string", default: "1000" },
  },
});

await setupPhoenix((line) => console.error(line));
const workDir = mkdtempSync(join(tmpdir(), "forge-phoenix-shot-"));
const port = await getPort({ host: "127.0.0.1" });
const url = `http://127.0.0.1:${port}`;
const phoenix = execa(phoenixCommand(), ["serve"], {
  env: {
    PHOENIX_WORKING_DIR: workDir,
    PHOENIX_HOST: "127.0.0.1",
    PHOENIX_PORT: String(port),
    PHOENIX_GRPC_PORT: String(await getPort({ host: "127.0.0.1" })),
    PHOENIX_TELEMETRY_ENABLED: "false",
  },
  reject: false,
  all: true,
});
try {
  console.error(`phoenix-screenshot: starting Phoenix on ${url}`);
  const deadline = Date.now() + 240_000;
  while (
    !(await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    ))
  ) {
    if (phoenix.exitCode !== null || Date.now() > deadline) {
      throw new Error(`Phoenix did not start on ${url}: ${((await phoenix).all ?? "").slice(-2000)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }

  const otlp = await startOtlpExport({ endpoint: url, metrics: false, serviceName: "forge-guardrails" });
  const runner = new WorkflowRunner({
    client: new ScriptedClient([
      text('{"tool": "get_forecast", "args": {"city": "Paris"}}'),
      toolCall("report_weather", { city: "Paris", weather: "sunny" }),
      text('Sure! <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'),
      toolCall("report_weather", { city: "Paris", weather: "sunny" }),
    ]),
    contextManager: createPassthrough(),
    observers: [
      otelObserver({
        tracer: otlp.tracer,
        meter: otlp.meter,
        model: "qwen2.5-coder-1.5b",
        recordContent: true,
      }),
    ],
  });
  await runner.run(weatherWorkflow().workflow, "Weather in Paris?", {
    promptVars: { user: "Ada" },
    runId: "docs-run",
  });
  await otlp.shutdown();

  // The run's trace id, read back through Phoenix's REST API.
  let traceId: string | undefined;
  for (let i = 0; i < 100 && traceId === undefined; i++) {
    const { data } = (await (await fetch(`${url}/v1/projects/default/spans?limit=100`)).json()) as {
      data: { name: string; context: { trace_id: string } }[];
    };
    traceId = data.find((span) => span.name === "invoke_agent weather")?.context.trace_id;
    if (traceId === undefined) await new Promise((resolve) => setTimeout(resolve, 300));
  }
  if (traceId === undefined) throw new Error("Phoenix never stored the run's span");
  // Phoenix's project ids are GraphQL global ids: "Project:1", base64.
  const page = `${url}/projects/${Buffer.from("Project:1").toString("base64")}/traces/${traceId}`;
  console.error(`phoenix-screenshot: ${page} → ${args.out}`);
  await execa(
    process.env.CHROMIUM ?? "chromium",
    [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--hide-scrollbars",
      `--window-size=${args.width},${args.height}`,
      "--virtual-time-budget=20000",
      `--screenshot=${args.out}`,
      page,
    ],
    { stdio: "inherit" },
  );
  console.error(`phoenix-screenshot: wrote ${args.out} (${statSync(args.out).size} bytes)`);
} finally {
  phoenix.kill("SIGTERM");
  await phoenix;
  rmSync(workDir, { recursive: true, force: true });
}
