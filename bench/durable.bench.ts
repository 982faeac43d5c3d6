/**
 * Durable runs benchmark (`npm run bench:durable`), loopback only, on a redis-server this script
 * starts (test/helpers/redis-server.ts):
 *
 * (a) checkpoint write latency through a lease (`saveCheckpoint`: the fenced Lua compare-and-set on
 *     Redis, the atomic file replace on the embedded queue), p50/p99 over --writes writes after 100
 *     warm-up writes, for a real snapshot of the shop workflow (after its tool batch) and the same
 *     snapshot padded to about 13 kB (a 21-iteration run); Redis without persistence and with the
 *     append-only file fsynced on every write; PostgreSQL 15 (test/helpers/postgres-server.ts: the
 *     fenced UPDATE on BullMQ's job row) with fsync on (its default) and off.
 * (b) time from a worker `kill -9` to the run resuming on another worker with the BullMQ defaults
 *     (lock 5 s, stall check 2 s): a worker process hangs in send_receipt, is killed, and a
 *     worker in this process takes the run over; --recovery-runs trials.
 *
 * (c) workflows per minute over a pool of endpoints and (d) snapshot bytes per iteration: see
 *     bench/durable-pool.ts.
 *
 * Prints Markdown tables with the machine's load average.
 * Options: --writes N (default 2000), --recovery-runs N (default 3; 0 skips (b)), --pool-runs N
 * (default 64; 0 skips (c)), --pool-delay-ms N (simulated inference time, default 200),
 * --pool-concurrency N (the worker's, default 8).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { WorkflowRunner } from "../src/loop/runner.ts";
import {
  createBullmqQueue,
  createEmbeddedQueue,
  createPostgresQueue,
  defineRegistry,
  type RunQueue,
  type StoredCheckpoint,
  startWorker,
} from "../src/queue/index.ts";
import { ScriptedClient } from "../src/testing/index.ts";
import { shopScript, shopWorkflow } from "../test/fixtures/durable/shop.ts";
import { startTestPostgresServer } from "../test/helpers/postgres-server.ts";
import { startTestRedisServer } from "../test/helpers/redis-server.ts";
import { poolThroughput, snapshotGrowth } from "./durable-pool.ts";

const { values: args } = parseArgs({
  options: {
    writes: { type: "string", default: "2000" },
    "recovery-runs": { type: "string", default: "3" },
    "pool-runs": { type: "string", default: "64" },
    "pool-delay-ms": { type: "string", default: "200" },
    "pool-concurrency": { type: "string", default: "8" },
  },
});
const WRITES = Number(args.writes);
const RECOVERY_RUNS = Number(args["recovery-runs"]);

/** The shop workflow's checkpoints, run to the end in this process; the last one is the biggest. */
async function shopCheckpoint(): Promise<StoredCheckpoint> {
  const dir = mkdtempSync(join(tmpdir(), "forge-bench-"));
  const checkpoints: StoredCheckpoint[] = [];
  const runner = new WorkflowRunner({
    client: new ScriptedClient(shopScript()),
    contextManager: { maybeCompact: (messages) => messages },
  });
  await runner.run(shopWorkflow(dir), "Buy A1", {
    runId: "bench",
    checkpoint: async (snapshot, meta) => {
      checkpoints.push({ snapshot, meta });
    },
  });
  rmSync(dir, { recursive: true, force: true });
  return checkpoints.at(-1) as StoredCheckpoint;
}

/** `checkpoint` with its snapshot padded to about `bytes` (extra history-like text). */
function padded(checkpoint: StoredCheckpoint, bytes: number): StoredCheckpoint {
  const size = JSON.stringify(checkpoint).length;
  return {
    ...checkpoint,
    snapshot: { ...(checkpoint.snapshot as object), padding: "x".repeat(Math.max(0, bytes - size)) },
  };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

async function writeLatency(queue: RunQueue, checkpoint: StoredCheckpoint, runId: string) {
  await queue.enqueue("shop", "Buy A1", { runId });
  const lease = await queue.take("bench");
  if (!lease) throw new Error("the bench run was not handed out");
  for (let index = 0; index < 100; index++) await lease.saveCheckpoint(checkpoint);
  const times: number[] = [];
  for (let index = 0; index < WRITES; index++) {
    const started = performance.now();
    await lease.saveCheckpoint(checkpoint);
    times.push(performance.now() - started);
  }
  await lease.complete(null);
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

async function checkpointWrites(): Promise<string[]> {
  const real = await shopCheckpoint();
  const sizes = [
    { label: "shop run, after its batch", checkpoint: real },
    { label: "padded to 13 kB", checkpoint: padded(real, 13_000) },
  ];
  const rows: string[] = [];
  const plain = await startTestRedisServer();
  const aof = await startTestRedisServer({ appendOnly: true });
  const dir = mkdtempSync(join(tmpdir(), "forge-bench-queue-"));
  try {
    const engines: { name: string; open: () => Promise<RunQueue> }[] = [
      {
        name: "BullMQ, Redis (no persistence)",
        open: () => createBullmqQueue({ connection: { url: plain.url } }),
      },
      {
        name: "BullMQ, Redis (append-only, fsync always)",
        open: () => createBullmqQueue({ connection: { url: aof.url } }),
      },
      { name: "embedded (atomic file, no fsync)", open: () => createEmbeddedQueue({ dir }) },
    ];
    for (const engine of engines) {
      const queue = await engine.open();
      for (const [index, size] of sizes.entries()) {
        const bytes = JSON.stringify(size.checkpoint).length;
        const { p50, p99 } = await writeLatency(queue, size.checkpoint, `bench-${index}`);
        rows.push(
          `| ${engine.name} | ${size.label} | ${(bytes / 1000).toFixed(1)} kB | ${p50.toFixed(3)} | ${p99.toFixed(3)} |`,
        );
      }
      await queue.close();
    }
  } finally {
    await plain.stop();
    await aof.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

/** (a) on PostgreSQL: clusters of their own, fsync on (PostgreSQL's default) and off. */
async function postgresCheckpointWrites(): Promise<string[]> {
  const real = await shopCheckpoint();
  const sizes = [
    { label: "shop run, after its batch", checkpoint: real },
    { label: "padded to 13 kB", checkpoint: padded(real, 13_000) },
  ];
  const rows: string[] = [];
  for (const fsync of [true, false]) {
    const server = await startTestPostgresServer({ fsync });
    try {
      const queue = await createPostgresQueue({ connection: { url: server.url } });
      for (const [index, size] of sizes.entries()) {
        const bytes = JSON.stringify(size.checkpoint).length;
        const { p50, p99 } = await writeLatency(queue, size.checkpoint, `bench-${index}`);
        rows.push(
          `| BullMQ, PostgreSQL 15 (fsync ${fsync ? "on" : "off"}) | ${size.label} | ${(bytes / 1000).toFixed(1)} kB | ${p50.toFixed(3)} | ${p99.toFixed(3)} |`,
        );
      }
      await queue.close();
    } finally {
      await server.stop();
    }
  }
  return rows;
}

/** Kill a worker process hung in send_receipt; time until a worker here starts the call again. */
async function recoveryTrial(url: string, trial: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "forge-bench-recovery-"));
  const name = `bench-recovery-${trial}`;
  const log = () => {
    try {
      return readFileSync(join(dir, "effects.log"), "utf8").split("\n").filter(Boolean);
    } catch {
      return [];
    }
  };
  const starts = () => log().filter((line) => line.startsWith("start send_receipt")).length;
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      new URL("../test/fixtures/durable/bullmq-child.ts", import.meta.url).pathname,
      url,
      name,
      dir,
      // The killed worker runs with the defaults too (lockMs, stalledIntervalMs).
      "5000",
      "2000",
      "hang:send_receipt",
    ],
    { stdio: "inherit" },
  );
  while (starts() < 1) await sleep(10);
  const exited = new Promise((resolve) => child.on("exit", resolve));
  child.kill("SIGKILL");
  await exited;
  const killedAt = performance.now();
  const queue = await createBullmqQueue({ connection: { url }, name });
  const runner = new WorkflowRunner({
    client: new ScriptedClient(shopScript().slice(1)),
    contextManager: { maybeCompact: (messages) => messages },
  });
  const worker = startWorker({ queue, registry: defineRegistry({ workflows: [shopWorkflow(dir)], runner }) });
  while (starts() < 2) await sleep(10);
  const resumedMs = performance.now() - killedAt;
  const result = await queue.result("run-1");
  if (result !== "ok") throw new Error(`the resumed run ended with ${JSON.stringify(result)}`);
  await worker.close();
  await queue.close();
  rmSync(dir, { recursive: true, force: true });
  return resumedMs;
}

async function recovery(): Promise<string[]> {
  const redis = await startTestRedisServer();
  try {
    const rows: string[] = [];
    for (let trial = 0; trial < RECOVERY_RUNS; trial++) {
      const ms = await recoveryTrial(redis.url, trial);
      rows.push(`| ${trial + 1} | ${(ms / 1000).toFixed(2)} |`);
    }
    return rows;
  } finally {
    await redis.stop();
  }
}

const load = loadavg()
  .map((value) => value.toFixed(2))
  .join(" ");
console.log(`Machine: ${availableParallelism()} cores, load average ${load} before the run.\n`);
console.log(`### Checkpoint writes through a lease (${WRITES} writes after 100 warm-up; ms)\n`);
console.log("| engine | snapshot | size | p50 | p99 |\n| --- | --- | --- | --- | --- |");
for (const row of await checkpointWrites()) console.log(row);
for (const row of await postgresCheckpointWrites()) console.log(row);
if (RECOVERY_RUNS > 0) {
  console.log(
    "\n### Worker `kill -9` to the run resuming elsewhere (lock 5 s, stall check 2 s: the defaults)\n",
  );
  console.log("| trial | seconds |\n| --- | --- |");
  for (const row of await recovery()) console.log(row);
}
await printPoolFigures();
process.exit(0);

/** (c) and (d): BullMQ's figure on a redis-server of its own. */
async function printPoolFigures(): Promise<void> {
  const runs = Number(args["pool-runs"]);
  const delayMs = Number(args["pool-delay-ms"]);
  const concurrency = Number(args["pool-concurrency"]);
  if (runs > 0) {
    console.log(
      `\n### Workflows per minute over a pool of endpoints (2 sim-model endpoints × 4 slots, ${delayMs} ms per call, worker concurrency ${concurrency})\n`,
    );
    console.log(
      "| queue | runs | calls per run | simulated ms per call | measured ms per call | calls per endpoint | seconds | workflows/min | ideal/min (simulated) | of ideal | of ideal at the measured call time |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    );
    const redis = await startTestRedisServer();
    try {
      for (const row of await poolThroughput({ runs, delayMs, concurrency, redisUrl: redis.url }))
        console.log(row);
    } finally {
      await redis.stop();
    }
  }
  const { rows, growth } = await snapshotGrowth(20);
  console.log("\n### Checkpoint size per iteration (snapshot and meta as JSON, a 20-iteration run)\n");
  console.log("| iteration | bytes |\n| --- | --- |");
  for (const row of rows) console.log(row);
  console.log(`\nMean growth: ${growth.toFixed(0)} bytes per iteration.`);
}
