import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ABLATION_PRESETS } from "../../eval/ablation.ts";
import { startBackend } from "../../eval/backends/registry.ts";
import { planTasks, runBatch } from "../../eval/batch/batch.ts";
import { readJsonl } from "../../eval/batch/jsonl.ts";
import { currentVersions, type RunRow, runRowSchema } from "../../eval/batch/row.ts";
import { runEval } from "../../eval/cli/run-eval.ts";
import { EVAL_JOB, evalRunId, queueBatchIdPath } from "../../eval/queue/eval-job.ts";
import { openEvalQueue } from "../../eval/queue/open-queue.ts";
import { readTraces } from "../../eval/report/write-report.ts";
import { startTestPostgresServer, type TestPostgresServer } from "../helpers/postgres-server.ts";
import { startTestRedisServer, type TestRedisServer } from "../helpers/redis-server.ts";
import { scenario } from "./helpers.ts";

const workdir = () => mkdtempSync(join(tmpdir(), "forge-eval-queue-"));
const quietIo = { stdout: () => {}, stderr: () => {} };
const SCENARIOS = ["basic_2step", "relevance_detection"];
const CONFIGS = ["reforged", "bare"];
const planned = (runs: number) => SCENARIOS.length * CONFIGS.length * runs;
const evalArgs = (runs: number, delayMs: number) => [
  "--scenario",
  ...SCENARIOS,
  "--ablation",
  ...CONFIGS,
  "--runs",
  String(runs),
  "--profile",
  "mixed",
  "--delay-ms",
  String(delayMs),
];
const lineCount = (file: string) =>
  existsSync(file)
    ? readFileSync(file, "utf8")
        .split("\n")
        .filter((line) => line !== "").length
    : 0;

interface Started {
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
  stderr(): string;
}

const children: ChildProcess[] = [];
function start(args: string[]): Started {
  const child = spawn(process.execPath, ["--import", "tsx", "eval/cli/main.ts", "eval", ...args], {
    cwd: process.cwd(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>(
    (resolve) => child.once("exit", (code, signal) => resolve({ code, signal, stderr })),
  );
  return { child, exited, stderr: () => stderr };
}
const startWorker = (queue: string) => start(["worker", "--queue", queue, "--concurrency", "2"]);
const startCollector = (queue: string, out: string, runs: number, delayMs: number, extra: string[] = []) =>
  start([
    "run",
    ...evalArgs(runs, delayMs),
    "--out",
    out,
    "--queue",
    queue,
    "--no-progress",
    "--no-report",
    ...extra,
  ]);

async function until(condition: () => boolean, what: string): Promise<void> {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > 90_000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Stop workers with SIGTERM (they finish their runs under way) and return the runs each made. */
async function stopWorkers(workers: Started[]): Promise<number[]> {
  for (const worker of workers) worker.child.kill("SIGTERM");
  const made: number[] = [];
  for (const worker of workers) {
    const { code, signal, stderr } = await worker.exited;
    if (signal === "SIGKILL") continue;
    expect(code, stderr).toBe(0);
    made.push(Number(/made (\d+) runs/.exec(stderr)?.[1] ?? Number.NaN));
  }
  return made;
}

function expectEveryRunOnce(out: string, count: number): RunRow[] {
  const { rows, problems } = readJsonl(out, runRowSchema);
  expect(problems).toEqual([]);
  expect(rows).toHaveLength(count);
  expect(new Set(rows.map((row) => row.key)).size).toBe(count);
  const traces = readTraces(out.replace(/\.jsonl$/, ".traces.jsonl"));
  for (const row of rows) expect(traces.has(row.key), row.key).toBe(true);
  return rows;
}

afterEach(() => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

describe("eval batches on a Redis queue (BullMQ)", () => {
  let redis: TestRedisServer;
  beforeAll(async () => {
    redis = await startTestRedisServer();
  });
  afterAll(async () => {
    await redis?.stop();
  });
  // Each test its own database, so no test sees another's runs.
  let database = 0;
  const nextQueue = () => `${redis.url}/${++database}`;

  it("two workers make the runs, one collector writes each row once, equal to a local eval's", async () => {
    const queue = nextQueue();
    const dir = workdir();
    const out = join(dir, "queued.jsonl");
    const workers = [startWorker(queue), startWorker(queue)];
    const collector = startCollector(queue, out, 6, 5);
    const result = await collector.exited;
    expect(result.code, result.stderr).toBe(0);
    const made = await stopWorkers(workers);
    const rows = expectEveryRunOnce(out, planned(6));
    // No run made twice: what the workers say they made adds up to the batch.
    expect(made.reduce((sum, count) => sum + count, 0)).toBe(planned(6));

    // The sim-model is deterministic per scenario and seed: the same batch made here gives the same runs.
    const local = join(dir, "local.jsonl");
    await runEval(
      {
        scenario: SCENARIOS,
        ablation: CONFIGS,
        runs: 6,
        profile: "mixed",
        out: local,
        progress: false,
        report: false,
        workers: 1,
      },
      quietIo,
    );
    const localRows = new Map(readJsonl(local, runRowSchema).rows.map((row) => [row.key, row]));
    expect(localRows.size).toBe(planned(6));
    for (const row of rows) {
      const twin = localRows.get(row.key);
      expect(twin, row.key).toBeDefined();
      expect(
        { status: row.status, iterations: row.iterations, toolCalls: row.toolCalls, accurate: row.accurate },
        row.key,
      ).toEqual({
        status: twin?.status,
        iterations: twin?.iterations,
        toolCalls: twin?.toolCalls,
        accurate: twin?.accurate,
      });
    }
  }, 180_000);

  it("a collector killed mid-batch resumes: nothing enqueued twice, no row twice", async () => {
    const queue = nextQueue();
    const out = join(workdir(), "rows.jsonl");
    const workers = [startWorker(queue)];
    const first = startCollector(queue, out, 30, 20);
    await until(() => lineCount(out) >= 10, "10 rows");
    first.child.kill("SIGKILL");
    await first.exited;
    expect(lineCount(out)).toBeLessThan(planned(30));

    const second = startCollector(queue, out, 30, 20, ["--resume"]);
    const result = await second.exited;
    expect(result.code, result.stderr).toBe(0);
    await stopWorkers(workers);
    expectEveryRunOnce(out, planned(30));
    // Enqueued twice, held once: one job per run key.
    const opened = await openEvalQueue(queue, "collector");
    try {
      const jobs = await opened.queue.list();
      expect(jobs).toHaveLength(planned(30));
      expect(jobs.every((job) => job.workflow === EVAL_JOB && job.status === "completed")).toBe(true);
      const ids = new Set(
        readJsonl(out, runRowSchema).rows.map((row) =>
          evalRunId(readFileSync(queueBatchIdPath(out), "utf8").trim(), row.key),
        ),
      );
      expect(new Set(jobs.map((job) => job.runId))).toEqual(ids);
    } finally {
      await opened.queue.close();
    }
  }, 180_000);

  it("a worker killed mid-batch (kill -9): its runs are made by the other, every row once", async () => {
    const queue = nextQueue();
    const out = join(workdir(), "rows.jsonl");
    const victim = startWorker(queue);
    const survivor = startWorker(queue);
    const collector = startCollector(queue, out, 20, 40);
    await until(() => lineCount(out) >= 10, "10 rows");
    victim.child.kill("SIGKILL");
    const result = await collector.exited;
    expect(result.code, result.stderr).toBe(0);
    await stopWorkers([victim, survivor]);
    expectEveryRunOnce(out, planned(20));
    // The runs the victim had under way were taken a second time, by the survivor.
    const opened = await openEvalQueue(queue, "collector");
    try {
      const retaken = (await opened.queue.list()).filter((job) => job.attempts >= 2);
      expect(retaken.length).toBeGreaterThan(0);
    } finally {
      await opened.queue.close();
    }
  }, 180_000);
});

describe("eval batches on a PostgreSQL queue (BullMQ)", () => {
  let postgres: TestPostgresServer;
  beforeAll(async () => {
    postgres = await startTestPostgresServer();
  }, 60_000);
  afterAll(async () => {
    await postgres?.stop();
  });

  it("two workers make the runs, one collector writes each row once", async () => {
    const out = join(workdir(), "rows.jsonl");
    const workers = [startWorker(postgres.url), startWorker(postgres.url)];
    const collector = startCollector(postgres.url, out, 4, 5);
    const result = await collector.exited;
    expect(result.code, result.stderr).toBe(0);
    const made = await stopWorkers(workers);
    expectEveryRunOnce(out, planned(4));
    expect(made.reduce((sum, count) => sum + count, 0)).toBe(planned(4));
  }, 180_000);
});

describe("eval batches on an embedded queue (a directory)", () => {
  it("a worker makes the runs, the collector writes each row once; a second collector on the file adds nothing", async () => {
    const dir = workdir();
    const queue = join(dir, "queue");
    const out = join(dir, "rows.jsonl");
    const worker = startWorker(queue);
    await until(() => /taking runs/.test(worker.stderr()), "the worker to hold the directory");
    const collector = startCollector(queue, out, 4, 5);
    const result = await collector.exited;
    expect(result.code, result.stderr).toBe(0);
    expectEveryRunOnce(out, planned(4));

    const again = startCollector(queue, out, 4, 5, ["--resume"]);
    const second = await again.exited;
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toMatch(`${planned(4)} already in`);
    const [made] = await stopWorkers([worker]);
    expect(made).toBe(planned(4));
    expectEveryRunOnce(out, planned(4));
  }, 180_000);

  it("a worker killed mid-batch (kill -9): the next worker on the directory makes its runs, every row once", async () => {
    const dir = workdir();
    const queue = join(dir, "queue");
    const out = join(dir, "rows.jsonl");
    const victim = startWorker(queue);
    await until(() => /taking runs/.test(victim.stderr()), "the worker to hold the directory");
    const collector = startCollector(queue, out, 20, 40);
    await until(() => lineCount(out) >= 10, "10 rows");
    victim.child.kill("SIGKILL");
    await victim.exited;
    const opened = await openEvalQueue(queue, "collector");
    const stranded = (await opened.queue.list({ status: "active" })).length;
    await opened.queue.close();
    // It had runs under way: they are active on disk until a worker opens the directory again.
    expect(stranded).toBeGreaterThan(0);
    const successor = startWorker(queue);
    const result = await collector.exited;
    expect(result.code, result.stderr).toBe(0);
    await stopWorkers([successor]);
    expectEveryRunOnce(out, planned(20));
  }, 180_000);
});

describe("a batch stopped while its runs are made elsewhere", () => {
  it("writes no row for the runs it was still waiting for", async () => {
    const dir = workdir();
    const out = join(dir, "rows.jsonl");
    const identity = { backend: "sim-model", model: "sim/clean", baseSeed: 0, stream: false };
    const tasks = planTasks(identity, [scenario("basic_2step")], [ABLATION_PRESETS.reforged!], 3);
    const session = await startBackend("sim-model", { profile: "clean" });
    const controller = new AbortController();
    try {
      const summary = await runBatch({
        tasks,
        session,
        identity,
        versions: currentVersions(),
        batchId: "b",
        out,
        tracesOut: null,
        concurrency: 3,
        signal: controller.signal,
        // A queue's wait: rejects once the batch is stopped (Ctrl-C), never resolves before.
        execute: () =>
          new Promise((_, reject) => {
            controller.signal.addEventListener("abort", () => reject(new Error("aborted")), { once: true });
            setTimeout(() => controller.abort(), 100);
          }),
      });
      expect(summary.written).toBe(0);
      expect(lineCount(out)).toBe(0);
    } finally {
      await session.close();
    }
  });
});
