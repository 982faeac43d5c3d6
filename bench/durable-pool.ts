/**
 * bench:durable's figures for the pool of endpoints and the snapshot size (imported by
 * durable.bench.ts, which prints them):
 *
 * (c) workflows per minute through a queue (the embedded engine, and BullMQ on Redis when given
 *     a URL) with a worker of concurrency 8 (by default) inferring through an `EndpointPool` of two sim-model
 *     servers (each a process of its own) with 4 slots each and a fixed simulated inference time,
 *     against the ideal Σ slots ÷ inference time per run (every slot busy all the time): with the
 *     simulated time per call, and with the time calls really held their slots (HTTP and the
 *     sim-model's own work included), which isolates how well the pool and queue keep slots busy.
 * (d) the checkpoint (snapshot and meta, as JSON) at each iteration of a 20-iteration run.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { z } from "zod";
import { scenarioById } from "../eval/scenarios/index.ts";
import { EndpointPool, OpenAICompatibleClient } from "../src/clients/index.ts";
import { defineTool } from "../src/core/tools.ts";
import type { LLMClient } from "../src/core/types.ts";
import { defineWorkflow } from "../src/core/workflow.ts";
import { WorkflowRunner } from "../src/loop/runner.ts";
import {
  createBullmqQueue,
  createEmbeddedQueue,
  defineRegistry,
  type RunQueue,
  startWorker,
} from "../src/queue/index.ts";
import { ScriptedClient, toolCall } from "../src/testing/index.ts";

/** The scenario every pooled run plays: 10 reference steps, no compaction at its budget. */
const SCENARIO_ID = "compaction_chain_baseline";
const ENDPOINTS = 2;
const SLOTS = 4;

export interface PoolThroughputOptions {
  runs: number;
  delayMs: number;
  /** The worker's concurrency (runs under way at once). */
  concurrency: number;
  /** BullMQ on this Redis too. */
  redisUrl?: string;
}

/** One Markdown row per engine. */
export async function poolThroughput(options: PoolThroughputOptions): Promise<string[]> {
  const rows: string[] = [];
  rows.push(await poolRun("embedded", options, (dir) => createEmbeddedQueue({ dir })));
  const { redisUrl } = options;
  if (redisUrl) {
    rows.push(
      await poolRun("BullMQ, Redis", options, () =>
        createBullmqQueue({ connection: { url: redisUrl }, name: `bench-pool-${Date.now()}` }),
      ),
    );
  }
  return rows;
}

async function poolRun(
  engine: string,
  options: PoolThroughputOptions,
  open: (dir: string) => Promise<RunQueue>,
): Promise<string> {
  const scenario = scenarioById(SCENARIO_ID);
  if (!scenario) throw new Error(`no scenario ${SCENARIO_ID}`);
  const sims = await Promise.all(Array.from({ length: ENDPOINTS }, () => startSimProcess(options.delayMs)));
  const held: number[] = [];
  const pool = new EndpointPool({
    endpoints: sims.map((sim) => ({ url: sim.url, slots: SLOTS })),
    createClient: (endpoint) =>
      timed(
        new OpenAICompatibleClient({
          baseUrl: endpoint.clientUrl,
          model: `sim/clean/${SCENARIO_ID}/0`,
          mode: "native",
          retries: 0,
          logger: () => {},
        }),
        held,
      ),
    logger: () => {},
  });
  const dir = mkdtempSync(join(tmpdir(), "forge-bench-pool-"));
  const queue = await open(dir);
  // The registry runner's own client is never used: the worker infers through the pool.
  const runner = new WorkflowRunner({
    client: new ScriptedClient([]),
    contextManager: { maybeCompact: (messages) => messages },
    maxIterations: scenario.maxIterations,
  });
  const { workflow } = scenario.build();
  try {
    await pool.start();
    const runIds = Array.from({ length: options.runs }, (_, index) => `pool-run-${index}`);
    for (const runId of runIds) await queue.enqueue(workflow.name, scenario.userMessage, { runId });
    const started = performance.now();
    const worker = startWorker({
      queue,
      registry: defineRegistry({ workflows: [workflow], runner }),
      endpoints: pool,
      concurrency: options.concurrency,
    });
    const results = await Promise.allSettled(runIds.map((runId) => queue.result(runId)));
    const seconds = (performance.now() - started) / 1000;
    await worker.close();
    const failed = results.filter((result) => result.status === "rejected");
    if (failed.length > 0) {
      throw new Error(
        `${failed.length} pooled runs failed: ${String((failed[0] as PromiseRejectedResult).reason)}`,
      );
    }
    const perEndpoint = await Promise.all(sims.map((sim) => sim.requests()));
    const callsPerRun = perEndpoint.reduce((sum, count) => sum + count, 0) / options.runs;
    const perMinute = (options.runs / seconds) * 60;
    // Every slot busy all the time: Σ slots ÷ (calls per run × time per call) runs per second,
    // with the simulated time, and with the time a call really held its slot (HTTP included).
    const idealAt = (callMs: number) => ((ENDPOINTS * SLOTS) / ((callsPerRun * callMs) / 1000)) * 60;
    const heldMs = held.reduce((sum, ms) => sum + ms, 0) / held.length;
    const ideal = idealAt(options.delayMs);
    const busy = idealAt(heldMs);
    return `| ${engine} | ${options.runs} | ${callsPerRun.toFixed(1)} | ${options.delayMs} | ${heldMs.toFixed(1)} | ${perEndpoint.join(" / ")} | ${seconds.toFixed(2)} | ${perMinute.toFixed(1)} | ${ideal.toFixed(1)} | ${((perMinute / ideal) * 100).toFixed(1)} % | ${((perMinute / busy) * 100).toFixed(1)} % |`;
  } finally {
    await queue.close();
    await pool.close();
    for (const sim of sims) sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `client`, recording how long each call took (the time it held its slot) into `held`. */
function timed(client: LLMClient, held: number[]): LLMClient {
  return {
    apiFormat: client.apiFormat,
    getContextLength: () => client.getContextLength(),
    sendStream: (messages, tools, options) => client.sendStream(messages, tools, options),
    async send(messages, tools, options) {
      const started = performance.now();
      try {
        return await client.send(messages, tools, options);
      } finally {
        held.push(performance.now() - started);
      }
    },
  };
}

/** A sim-model server in a process of its own (as llama-server would be), on a free port. */
async function startSimProcess(delayMs: number): Promise<{
  url: string;
  requests: () => Promise<number>;
  stop: () => void;
}> {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      new URL("../eval/cli/main.ts", import.meta.url).pathname,
      "sim-model",
      "--port",
      "0",
      "--profile",
      "clean",
      "--delay-ms",
      String(delayMs),
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let output = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
      const found = /listening on (http:\/\/\S+)\/v1/.exec(output);
      if (found?.[1]) resolve(found[1]);
    });
    child.once("exit", (code) => reject(new Error(`sim-model exited with ${code}: ${output}`)));
  });
  return {
    url,
    requests: async () =>
      ((await (await fetch(`${url}/v1/sim/stats`)).json()) as { requests: number }).requests,
    stop: () => child.kill("SIGTERM"),
  };
}

/** The record a lookup returns: about 300 bytes of JSON, like a row from an API. */
function record(index: number) {
  return {
    id: `REC-${1000 + index}`,
    status: index % 3 === 0 ? "open" : "closed",
    owner: { name: `Owner ${index}`, email: `owner${index}@example.com` },
    amount: (index * 37.5).toFixed(2),
    note: `Record ${index} was updated after the review of the quarterly figures.`,
    tags: ["billing", "review", `batch-${index % 4}`],
  };
}

/**
 * The checkpoint's JSON size before each LLM call of a run of `iterations` iterations (one lookup
 * per iteration, then the terminal call): rows at a few iterations and the mean growth per iteration.
 */
export async function snapshotGrowth(iterations = 20): Promise<{ rows: string[]; growth: number }> {
  const lookup = defineTool({
    name: "lookup",
    description: "Look a record up",
    parameters: z.object({ index: z.number() }),
    execute: ({ index }) => record(index),
  });
  const finish = defineTool({
    name: "finish",
    description: "Report",
    parameters: z.object({ summary: z.string() }),
    execute: ({ summary }) => summary,
  });
  const workflow = defineWorkflow({
    name: "records",
    description: "Look records up, then report",
    tools: [lookup, finish],
    terminalTool: "finish",
    systemPrompt: "Look up each record the user names, then report what you found.",
  });
  const script = [
    ...Array.from({ length: iterations - 1 }, (_, index) => toolCall("lookup", { index }, "Next record.")),
    toolCall("finish", { summary: "All records looked up." }),
  ];
  const sizes: number[] = [];
  await new WorkflowRunner({
    client: new ScriptedClient(script),
    contextManager: { maybeCompact: (messages) => messages },
    maxIterations: iterations,
  }).run(workflow, "Look up records 0 to 18 and report.", {
    runId: "bench-snapshot",
    checkpoint: (snapshot, meta) => {
      if (meta.reason === "inference") sizes.push(JSON.stringify({ snapshot, meta }).length);
    },
  });
  const shown = [1, 2, 5, 10, 15, 20].filter((iteration) => iteration <= sizes.length);
  const rows = shown.map((iteration) => `| ${iteration} | ${sizes[iteration - 1]} |`);
  const growth = ((sizes.at(-1) as number) - (sizes[0] as number)) / (sizes.length - 1);
  return { rows, growth };
}
