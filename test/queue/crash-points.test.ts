/**
 * The crash-point matrix: a worker process killed with SIGKILL at each crash point — before a
 * checkpoint, mid-inference, mid-tool, between a tool and its checkpoint, mid-terminal — on BullMQ
 * over a real redis-server, BullMQ over a real PostgreSQL 15, and the embedded engine (its process
 * killed, so its directory lock is left behind). Another worker takes the run over from its last
 * checkpoint and completes it. For every run: exactly one completion, the final history equal to an
 * uninterrupted run's on the same engine, each idempotent effect applied once (by its idempotency
 * key), the unsafe charge never started twice, and the survivor's model asked only what the
 * checkpoint did not hold. One more point per engine, between the unsafe charge_card and its
 * checkpoint, where no history can equal an uninterrupted run's: the charge is answered with
 * OutcomeUnknown instead of run again, and the model checks it. The worker and its run:
 * test/fixtures/durable/crash-points.ts.
 */
import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createRunQueue, type RunQueue, type RunRecord } from "../../src/queue/index.ts";
import { toolCall } from "../../src/testing/index.ts";
import {
  CRASH_POINTS,
  type CrashPoint,
  effectsLog,
  orderScript,
  startOrderWorker,
  UNSAFE_CRASH_POINT,
} from "../fixtures/durable/crash-points.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { crashHarness, waitForLine } from "../helpers/crash-harness.ts";
import { startTestPostgresServer, type TestPostgresServer } from "../helpers/postgres-server.ts";
import { startTestRedisServer, type TestRedisServer } from "../helpers/redis-server.ts";

const LOCK_MS = 2_000;
const STALLED_INTERVAL_MS = 1_000;
const RESULT = "finish done for A1";

type Engine = "redis" | "postgres" | "embedded";

let redis: TestRedisServer;
let postgres: TestPostgresServer;
beforeAllOrFail(async () => {
  [redis, postgres] = await Promise.all([startTestRedisServer(), startTestPostgresServer()]);
}, 60_000);
afterAll(async () => {
  await Promise.all([redis?.stop(), postgres?.stop()]);
});

const { cleanups, tempDir, spawnFixture } = crashHarness("forge-crash-points-");

/** Where the engine's queue lives: the server's URL, or the embedded queue's directory. */
function whereOf(engine: Engine, dir: string): string {
  if (engine === "redis") return redis.url;
  if (engine === "postgres") return postgres.url;
  return join(dir, "queue");
}

async function openQueue(engine: Engine, where: string, name: string): Promise<RunQueue> {
  const options = { name, lockMs: LOCK_MS, stalledIntervalMs: STALLED_INTERVAL_MS };
  const queue = await createRunQueue(
    engine === "redis"
      ? { redis: where, ...options }
      : engine === "postgres"
        ? { postgres: where, ...options }
        : { embedded: where },
  );
  return queue;
}

/** A worker process (test/fixtures/durable/crash-point-child.ts) that hangs at `crashPoint`. */
function startChild(where: string, name: string, dir: string, crashPoint: CrashPoint): ChildProcess {
  return spawnFixture(new URL("../fixtures/durable/crash-point-child.ts", import.meta.url), [
    where,
    name,
    dir,
    String(LOCK_MS),
    String(STALLED_INTERVAL_MS),
    crashPoint,
  ]);
}

/** The history and effects of one run of the order workflow that nothing interrupted. */
interface Reference {
  context: unknown;
  effects: string[];
  starts: string[];
}

async function uninterruptedRun(engine: Engine): Promise<Reference> {
  const dir = mkdtempSync(join(tmpdir(), "forge-crash-points-reference-"));
  try {
    const queue = await openQueue(engine, whereOf(engine, dir), `reference-${randomUUID()}`);
    try {
      return await referenceOn(queue, dir);
    } finally {
      await queue.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function referenceOn(queue: RunQueue, dir: string): Promise<Reference> {
  await queue.enqueue("order", "Order A1", { runId: "run-1" });
  const { worker, client } = startOrderWorker({
    queue,
    dir,
    script: orderScript(),
    workerId: "reference",
    pollMs: 50,
  });
  try {
    expect(await queue.result("run-1")).toBe(RESULT);
  } finally {
    await worker.close();
  }
  client.assertDone();
  const record = (await queue.get("run-1")) as RunRecord;
  expect(record).toMatchObject({ status: "completed", attempts: 1, result: RESULT });
  // The last checkpoint, after finish returned: the whole history up to the terminal call, and
  // the terminal call's outcome.
  const context = contextOf(record) as { messages: { role: string }[]; outcomes: { tool: string }[] };
  expect(context.messages.map((message) => message.role)).toEqual([
    "system",
    "user",
    "assistant",
    "tool",
    "tool",
    "assistant",
    "tool",
    "assistant",
  ]);
  expect(context.outcomes).toMatchObject([{ tool: "finish", status: "ok", content: RESULT }]);
  const lines = effectsLog(dir);
  return {
    context,
    effects: lines.filter((line) => line.startsWith("effect ")),
    starts: lines.filter((line) => line.startsWith("start ")),
  };
}

/** The workflow machine's context in a run's last checkpoint: its history, outcomes and counters. */
function contextOf(record: RunRecord | undefined): unknown {
  return (record?.checkpoint?.snapshot as { context?: unknown } | undefined)?.context;
}

/**
 * A worker process on a fresh queue of `engine` runs the order run until it hangs at `crashPoint`,
 * is killed with SIGKILL there, and the queue is opened again in this process (for the embedded
 * engine, past the dead process's lock).
 */
async function killAt(engine: Engine, crashPoint: CrashPoint) {
  const dir = tempDir();
  const name = `crash-points-${randomUUID()}`;
  const where = whereOf(engine, dir);
  const child = startChild(where, name, dir, crashPoint);
  const exited = new Promise((resolve) => child.on("exit", (_code, signal) => resolve(signal)));
  // Up to 45 s: the child's start, then its run up to the crash point.
  await waitForLine(
    dir,
    (line) => line.startsWith(`reached ${crashPoint}`),
    `the worker to reach ${crashPoint}`,
    45_000,
  );
  child.kill("SIGKILL");
  expect(await exited).toBe("SIGKILL");
  const beforeTakeover = effectsLog(dir);
  if (engine === "embedded") {
    // The killed process's directory lock stays behind; proper-lockfile calls it stale once its
    // mtime is 10 s old. Aged by hand instead of waited for (its owner is dead and no longer
    // refreshes it); test/queue/embedded-queue.test.ts waits the real 10 s.
    const past = new Date(Date.now() - 60_000);
    utimesSync(join(where, "queue.lock"), past, past);
  }
  const queue = await openQueue(engine, where, name);
  cleanups.push(() => queue.close());
  return { dir, queue, beforeTakeover };
}

/** Per crash point: the checkpoint the run resumes from (the last one written before the kill), how
 * many of the model's answers that checkpoint already holds (the survivor's script is the rest),
 * and the tool call the survivor runs again with the same idempotency key, if any.
 */
const EXPECTED: Record<
  (typeof CRASH_POINTS)[number],
  { resumesFrom: { seq: number; reason: string; iteration: number }; answered: number; rerun?: string }
> = {
  // The first answer arrived but the checkpoint before its batch was never written: asked again.
  "before-checkpoint": { resumesFrom: { seq: 1, reason: "inference", iteration: 1 }, answered: 0 },
  // The first batch's results are checkpointed; the second call is asked again.
  "mid-inference": { resumesFrom: { seq: 7, reason: "inference", iteration: 2 }, answered: 1 },
  // send_receipt started (checkpointed as started) and never returned: run again, as attempt 2.
  "mid-tool": {
    resumesFrom: { seq: 9, reason: "call_started", iteration: 2 },
    answered: 2,
    rerun: "send_receipt",
  },
  // reserve_stock applied its effect, its result was never checkpointed: run again, same key.
  "between-tool-and-checkpoint": {
    resumesFrom: { seq: 3, reason: "call_started", iteration: 1 },
    answered: 1,
    rerun: "reserve_stock",
  },
  // Every answer is checkpointed; finish runs again and the model is not asked anything.
  "mid-terminal": {
    resumesFrom: { seq: 13, reason: "call_started", iteration: 3 },
    answered: 3,
    rerun: "finish",
  },
};

describe.each<Engine>(["redis", "postgres", "embedded"])("%s: a worker killed with SIGKILL", (engine) => {
  let reference: Reference;
  beforeAllOrFail(async () => {
    reference = await uninterruptedRun(engine);
  }, 60_000);

  it.each(CRASH_POINTS)(
    "%s: the run resumes elsewhere and completes once, with an uninterrupted run's history and effects",
    async (crashPoint) => {
      const expected = EXPECTED[crashPoint];
      const { dir, queue, beforeTakeover } = await killAt(engine, crashPoint);
      const interrupted = await queue.get("run-1");
      expect(interrupted?.status).not.toBe("completed");
      expect(interrupted?.checkpoint?.meta).toMatchObject(expected.resumesFrom);

      const tail = orderScript().slice(expected.answered);
      const { worker, client } = startOrderWorker({
        queue,
        dir,
        script: tail,
        workerId: "survivor",
        pollMs: 50,
      });
      cleanups.push(() => worker.close());
      expect(await queue.result("run-1")).toBe(RESULT);
      await worker.close();

      // Exactly one completion, on the second lease.
      const record = await queue.get("run-1");
      expect(record).toMatchObject({ status: "completed", attempts: 2, result: RESULT });
      expect(await queue.list({ status: "completed" })).toHaveLength(1);
      const lines = effectsLog(dir);
      expect(lines.filter((line) => line.startsWith("settled run-1 completed"))).toEqual([
        "settled run-1 completed by survivor",
      ]);
      // The survivor's model was asked exactly what the checkpoint did not hold.
      expect(client.calls).toHaveLength(tail.length);

      // The history (messages, the last batch's outcomes, the counters) is an uninterrupted run's;
      // only the terminal batch's start count says that finish ran twice (it is never cleared).
      // The checkpoint count goes on across the resume (it never restarts at 1), so it is at least
      // the uninterrupted run's; the crashed lease's checkpoints make it higher.
      const { checkpointSeq: referenceSeq, ...uninterrupted } = reference.context as {
        started: Record<string, number>;
        checkpointSeq?: number;
      };
      const { checkpointSeq: seq, ...resumed } = contextOf(record) as { checkpointSeq?: number };
      expect(seq).toBeGreaterThanOrEqual(referenceSeq ?? Number.POSITIVE_INFINITY);
      expect(resumed).toEqual(
        crashPoint === "mid-terminal"
          ? {
              ...uninterrupted,
              started: Object.fromEntries(
                Object.entries(uninterrupted.started).map(([id, n]) => [id, n + 1]),
              ),
            }
          : uninterrupted,
      );

      // Each effect applied once, under the same keys as in the uninterrupted run.
      expect(lines.filter((line) => line.startsWith("effect "))).toEqual(reference.effects);
      // The unsafe charge started once: never run again after the crash.
      expect(lines.filter((line) => line.startsWith("start charge_card"))).toHaveLength(1);
      // The call under way at the crash ran again with its idempotency key; nothing else did.
      const starts = lines.filter((line) => line.startsWith("start "));
      const keyOf = (line: string) => line.split(" ").slice(0, 3).join(" ");
      const repeated = starts.map(keyOf).filter((key, index, all) => all.indexOf(key) !== index);
      expect(repeated).toEqual(
        expected.rerun ? [expect.stringMatching(`^start ${expected.rerun} run-1:`)] : [],
      );
      expect(starts.map(keyOf).sort()).toEqual([...reference.starts.map(keyOf), ...repeated].sort());
      // The re-run knows it is one: the start was checkpointed, so it is attempt 2, resumed.
      if (expected.rerun) {
        expect(
          starts
            .filter((line) => line.startsWith(`start ${expected.rerun} `))
            .map((line) => line.split(" ")[3]),
        ).toEqual(["attempt=1", "attempt=2"]);
      }
      // reserve_stock's effect was applied before the kill: its second run found its key and skipped.
      const skips = lines.filter((line) => line.startsWith("skip "));
      expect(skips).toHaveLength(crashPoint === "between-tool-and-checkpoint" ? 1 : 0);
      if (crashPoint === "between-tool-and-checkpoint")
        expect(beforeTakeover.filter((line) => line.startsWith("effect reserve_stock"))).toHaveLength(1);
    },
    60_000,
  );

  it("between the unsafe charge_card and its checkpoint: the charge is never re-run; its unknown outcome is checked instead", async () => {
    const { dir, queue, beforeTakeover } = await killAt(engine, UNSAFE_CRASH_POINT);
    expect(beforeTakeover.filter((line) => line.startsWith("effect charge_card"))).toHaveLength(1);
    // The last checkpoint says the charge started, not that it returned.
    const interrupted = await queue.get("run-1");
    expect(interrupted?.checkpoint?.meta).toMatchObject({ seq: 5, reason: "call_started", iteration: 1 });

    // Told the charge's outcome is unknown, the model checks it, then goes on.
    const tail = [
      toolCall("check_charge", { order: "A1" }),
      toolCall("send_receipt", { order: "A1" }),
      toolCall("finish", { order: "A1" }),
    ];
    const { worker, client } = startOrderWorker({
      queue,
      dir,
      script: tail,
      workerId: "survivor",
      pollMs: 50,
    });
    cleanups.push(() => worker.close());
    expect(await queue.result("run-1")).toBe(RESULT);
    await worker.close();
    expect(client.calls).toHaveLength(tail.length);

    const record = await queue.get("run-1");
    expect(record).toMatchObject({ status: "completed", attempts: 2, result: RESULT });
    expect(await queue.list({ status: "completed" })).toHaveLength(1);
    const lines = effectsLog(dir);
    expect(lines.filter((line) => line.startsWith("settled run-1 completed"))).toEqual([
      "settled run-1 completed by survivor",
    ]);
    // Charged once, started once: the interrupted call was answered, not run again.
    expect(lines.filter((line) => line.startsWith("start charge_card"))).toHaveLength(1);
    expect(lines.filter((line) => line.startsWith("effect charge_card"))).toHaveLength(1);
    for (const tool of ["reserve_stock", "send_receipt", "finish"])
      expect(lines.filter((line) => line.startsWith(`effect ${tool} `))).toHaveLength(1);
    // The history is the uninterrupted run's up to the charge, whose result is OutcomeUnknown.
    const messages = (contextOf(record) as { messages: { role: string; content: string }[] }).messages;
    const referenceMessages = (reference.context as { messages: unknown[] }).messages;
    expect(messages.slice(0, 4)).toEqual(referenceMessages.slice(0, 4));
    expect(messages[4]).toMatchObject({ role: "tool", toolName: "charge_card" });
    expect(messages[4]?.content).toMatch(/^\[ToolError\] OutcomeUnknown: 'charge_card' was interrupted/);
    expect(messages[6]).toMatchObject({
      role: "tool",
      toolName: "check_charge",
      content: "charge found for A1",
    });
  }, 60_000);
});
