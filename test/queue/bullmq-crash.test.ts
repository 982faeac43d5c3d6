/**
 * BullMQ workers that crash or freeze, against a real redis-server: a worker process killed with
 * SIGKILL mid-batch leaves its run to another worker within the lock and stall window, and one
 * frozen with SIGSTOP past its lock and woken up has its writes refused, so no effect runs twice;
 * redis-server itself killed with SIGKILL (append-only file on) and restarted mid-run.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { createBullmqQueue, defineRegistry, startWorker } from "../../src/queue/index.ts";
import { ScriptedClient } from "../../src/testing/index.ts";
import { shopScript, shopWorkflow } from "../fixtures/durable/shop.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { startTestRedisServer, type TestRedisServer } from "../helpers/redis-server.ts";

const LOCK_MS = 2_000;
const STALLED_INTERVAL_MS = 1_000;

let redis: TestRedisServer;
beforeAllOrFail(async () => {
  redis = await startTestRedisServer();
}, 30_000);
afterAll(async () => {
  await redis?.stop();
});

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "forge-bullmq-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function effectsLog(dir: string): string[] {
  try {
    return readFileSync(join(dir, "effects.log"), "utf8").split("\n").filter(Boolean);
  } catch {
    return [];
  }
}

async function waitForLine(dir: string, test: (line: string) => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!effectsLog(dir).some(test)) {
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; log:\n${effectsLog(dir).join("\n")}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A worker process (test/fixtures/durable/bullmq-child.ts) on queue `name`. */
function startChild(name: string, dir: string, mode: string, url = redis.url): ChildProcess {
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      new URL("../fixtures/durable/bullmq-child.ts", import.meta.url).pathname,
      url,
      name,
      dir,
      String(LOCK_MS),
      String(STALLED_INTERVAL_MS),
      mode,
    ],
    { stdio: "inherit" },
  );
  cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGCONT");
      child.kill("SIGKILL");
    }
  });
  return child;
}

/** A worker in this process on queue `name`, answering with `script`. */
async function startLocalWorker(
  name: string,
  dir: string,
  script: ReturnType<typeof shopScript>,
  url = redis.url,
) {
  const queue = await createBullmqQueue({
    connection: { url },
    name,
    lockMs: LOCK_MS,
    stalledIntervalMs: STALLED_INTERVAL_MS,
  });
  cleanups.push(() => queue.close());
  const runner = new WorkflowRunner({
    client: new ScriptedClient(script),
    contextManager: { maybeCompact: (messages) => messages },
  });
  const worker = startWorker({
    queue,
    registry: defineRegistry({ workflows: [shopWorkflow(dir)], runner }),
    workerId: "survivor",
    pollMs: 50,
  });
  cleanups.push(() => worker.close());
  return { queue };
}

describe("a BullMQ worker process killed with SIGKILL mid-batch", () => {
  it("leaves its run to another worker within the lock and stall window; one completion, one charge", async () => {
    const dir = tempDir();
    const name = `crash-${randomUUID()}`;
    const child = startChild(name, dir, "hang:send_receipt");
    const exited = new Promise((resolve) => child.on("exit", (_code, signal) => resolve(signal)));
    await waitForLine(
      dir,
      (line) => line.startsWith("start send_receipt"),
      "the worker to reach send_receipt",
    );
    child.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");
    const killedAt = Date.now();

    // The snapshot already holds the first answer: the survivor needs only the rest of the script.
    const { queue } = await startLocalWorker(name, dir, shopScript().slice(1));
    const started = (line: string) => line.startsWith("start send_receipt");
    while (effectsLog(dir).filter(started).length < 2) {
      if (Date.now() - killedAt > 30_000) throw new Error("the run never resumed on the survivor");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const resumeMs = Date.now() - killedAt;
    expect(await queue.result("run-1")).toBe("ok");
    console.log(
      `[bullmq-crash] SIGKILL to resume: ${resumeMs} ms (lock ${LOCK_MS} ms, stall check ${STALLED_INTERVAL_MS} ms)`,
    );
    // The lock must expire (≤ LOCK_MS) and the stall checker must see it twice (≤ 2 intervals).
    expect(resumeMs).toBeLessThanOrEqual(LOCK_MS + 2 * STALLED_INTERVAL_MS + 1_500);

    const lines = effectsLog(dir);
    expect(lines.filter((line) => line.startsWith("effect charge_card"))).toHaveLength(1);
    expect(lines.filter((line) => line.startsWith("effect send_receipt"))).toHaveLength(1);
    const record = await queue.get("run-1");
    expect(record).toMatchObject({ status: "completed", attempts: 2, result: "ok" });
    expect(await queue.list({ status: "completed" })).toHaveLength(1);
  }, 60_000);
});

describe("a BullMQ worker frozen with SIGSTOP past its lock", () => {
  it("has its writes refused once woken; the new owner completes the run and no effect runs twice", async () => {
    const dir = tempDir();
    const name = `freeze-${randomUUID()}`;
    // The child's first inference takes 1.5 s of wall time: it is frozen in the middle of it.
    const child = startChild(name, dir, "slow-infer:1500");
    await waitForLine(dir, (line) => line === "infer 0", "the worker's first inference");
    child.kill("SIGSTOP");

    // Its lock runs out; another worker takes the run over and completes it.
    const { queue } = await startLocalWorker(name, dir, shopScript());
    expect(await queue.result("run-1")).toBe("ok");
    const before = effectsLog(dir);
    expect(before.filter((line) => line.startsWith("effect charge_card"))).toHaveLength(1);

    // Woken up, the frozen worker finishes its inference and tries to write its checkpoint before
    // the tool batch: refused, it stops without charging the card again.
    child.kill("SIGCONT");
    await waitForLine(dir, (line) => line === "settled run-1 lost", "the woken worker to give the run up");
    await new Promise((resolve) => setTimeout(resolve, 500));
    const lines = effectsLog(dir);
    expect(lines.filter((line) => line.startsWith("start charge_card"))).toHaveLength(1);
    expect(lines.filter((line) => line.startsWith("effect charge_card"))).toHaveLength(1);
    expect(lines.filter((line) => line.startsWith("effect send_receipt"))).toHaveLength(1);
    expect(lines.filter((line) => line.startsWith("settled run-1 completed"))).toHaveLength(0);
    expect(await queue.get("run-1")).toMatchObject({ status: "completed", attempts: 2, result: "ok" });
  }, 60_000);
});

describe("redis-server killed with SIGKILL mid-run (append-only file on)", () => {
  it("the worker reconnects and the run completes once, from its checkpoint, without a second charge", async () => {
    const server = await startTestRedisServer({ appendOnly: true });
    cleanups.push(() => server.stop());
    const dir = tempDir();
    const name = `redis-kill-${randomUUID()}`;
    startChild(name, dir, "slow-infer:1500", server.url);
    await waitForLine(dir, (line) => line === "infer 0", "the worker's first inference");
    // Down for longer than the lock: the worker's lease lapses, and the run must resume from Redis.
    server.kill("SIGKILL");
    await new Promise((resolve) => setTimeout(resolve, LOCK_MS + 1_000));
    await server.restart();

    const producer = await createBullmqQueue({ connection: { url: server.url }, name });
    cleanups.push(() => producer.close());
    expect(await producer.result("run-1")).toBe("ok");
    await new Promise((resolve) => setTimeout(resolve, 500));
    const lines = effectsLog(dir);
    expect(lines.filter((line) => line.startsWith("effect charge_card"))).toHaveLength(1);
    const receipts = lines.filter((line) => line.startsWith("effect send_receipt"));
    expect(receipts.length).toBeGreaterThanOrEqual(1);
    expect(new Set(receipts).size).toBe(1); // one idempotency key, however often it ran
    expect(lines.filter((line) => line === "settled run-1 completed")).toHaveLength(1);
    expect(await producer.list({ status: "completed" })).toHaveLength(1);
  }, 60_000);
});
