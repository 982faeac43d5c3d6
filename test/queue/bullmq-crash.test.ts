/**
 * BullMQ workers that crash or freeze, against a real redis-server: a worker process killed with
 * SIGKILL mid-batch leaves its run to another worker within the lock and stall window, and one
 * frozen with SIGSTOP past its lock and woken up has its writes refused, so no effect runs twice;
 * redis-server itself killed with SIGKILL (append-only file on) and restarted mid-run; a batch of
 * runs on two worker processes, one of them killed.
 */
import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { createBullmqQueue } from "../../src/queue/index.ts";
import { type ScriptStep, toolCall } from "../../src/testing/index.ts";
import { shopScript } from "../fixtures/durable/shop.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { crashHarness, effectsLog, waitForLine } from "../helpers/crash-harness.ts";
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

const { cleanups, tempDir, spawnFixture, startShopWorker } = crashHarness("forge-bullmq-");

/** Waits up to 30 s: a child's start and the lock and stall window. */
const waitForEffect = (dir: string, test: (line: string) => boolean, what: string) =>
  waitForLine(dir, test, what, 30_000);

/** A worker process (test/fixtures/durable/bullmq-child.ts) on queue `name`. */
function startChild(name: string, dir: string, mode: string, url = redis.url): ChildProcess {
  return spawnFixture(new URL("../fixtures/durable/bullmq-child.ts", import.meta.url), [
    url,
    name,
    dir,
    String(LOCK_MS),
    String(STALLED_INTERVAL_MS),
    mode,
  ]);
}

/** A worker in this process on queue `name`, answering with `script`. */
function startLocalWorker(name: string, dir: string, script: ScriptStep[], url = redis.url) {
  return startShopWorker(
    { redis: url, name, lockMs: LOCK_MS, stalledIntervalMs: STALLED_INTERVAL_MS },
    dir,
    script,
  );
}

describe("a BullMQ worker process killed with SIGKILL mid-batch", () => {
  it.each([
    { hang: "send_receipt", note: "after charge_card returned: neither call runs twice" },
    { hang: "charge_card", note: "inside the unsafe charge_card: that call is never re-run" },
  ])(
    "killed in $hang ($note): resumes elsewhere within the lock and stall window, one completion",
    async ({ hang }) => {
      const dir = tempDir();
      const name = `crash-${randomUUID()}`;
      const child = startChild(name, dir, `hang:${hang}`);
      const exited = new Promise((resolve) => child.on("exit", (_code, signal) => resolve(signal)));
      await waitForEffect(dir, (line) => line.startsWith(`start ${hang}`), `the worker to reach ${hang}`);
      child.kill("SIGKILL");
      expect(await exited).toBe("SIGKILL");
      const killedAt = Date.now();
      const charge = effectsLog(dir).find((line) => line.startsWith("start charge_card")) ?? "";
      const chargeKey = charge.split(" ")[2] as string;

      // The snapshot already holds the first answer: the survivor needs only the rest of the script.
      // Told the interrupted charge's outcome is unknown, its model charges again (a new call, a
      // new key) after the step rule refuses finish.
      const rest =
        hang === "send_receipt"
          ? shopScript().slice(1)
          : [toolCall("finish"), toolCall("charge_card", { order: "A1" }), toolCall("finish")];
      const { queue } = await startLocalWorker(name, dir, rest);
      expect(await queue.result("run-1")).toBe("ok");
      const doneMs = Date.now() - killedAt;
      console.log(
        `[bullmq-crash] SIGKILL in ${hang} to the run completed elsewhere: ${doneMs} ms (lock ${LOCK_MS} ms, stall check ${STALLED_INTERVAL_MS} ms)`,
      );
      // The lock must expire (≤ LOCK_MS) and the stall checker must see it twice (≤ 2 intervals).
      expect(doneMs).toBeLessThanOrEqual(LOCK_MS + 2 * STALLED_INTERVAL_MS + 1_500);

      const lines = effectsLog(dir);
      const withKey = (prefix: string) => lines.filter((line) => line.startsWith(`${prefix} ${chargeKey}`));
      expect(withKey("start charge_card")).toHaveLength(1);
      expect(withKey("effect charge_card")).toHaveLength(hang === "send_receipt" ? 1 : 0);
      expect(lines.filter((line) => line.startsWith("effect charge_card"))).toHaveLength(1);
      expect(lines.filter((line) => line.startsWith("effect send_receipt"))).toHaveLength(1);
      const record = await queue.get("run-1");
      expect(record).toMatchObject({ status: "completed", attempts: 2, result: "ok" });
      if (hang === "charge_card") expect(JSON.stringify(record?.checkpoint)).toContain("OutcomeUnknown");
      expect(await queue.list({ status: "completed" })).toHaveLength(1);
    },
    60_000,
  );
});

describe("a BullMQ worker frozen with SIGSTOP past its lock", () => {
  it("has its writes refused once woken; the new owner completes the run and no effect runs twice", async () => {
    const dir = tempDir();
    const name = `freeze-${randomUUID()}`;
    // The child's first inference takes 1.5 s of wall time: it is frozen in the middle of it.
    const child = startChild(name, dir, "slow-infer:1500");
    await waitForEffect(dir, (line) => line === "infer 0", "the worker's first inference");
    child.kill("SIGSTOP");

    // Its lock runs out; another worker takes the run over and completes it.
    const { queue } = await startLocalWorker(name, dir, shopScript());
    expect(await queue.result("run-1")).toBe("ok");
    const before = effectsLog(dir);
    expect(before.filter((line) => line.startsWith("effect charge_card"))).toHaveLength(1);

    // Woken up, the frozen worker finishes its inference and tries to write its checkpoint before
    // the tool batch: refused, it stops without charging the card again.
    child.kill("SIGCONT");
    await waitForEffect(dir, (line) => line === "settled run-1 lost", "the woken worker to give the run up");
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
    await waitForEffect(dir, (line) => line === "infer 0", "the worker's first inference");
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
    // Its lock expired while Redis was down: the first lease's writes were refused once Redis came
    // back, and the stall checker handed the run out again.
    expect(lines).toContain("settled run-1 lost");
    expect((await producer.get("run-1"))?.attempts).toBe(2);
    expect(await producer.list({ status: "completed" })).toHaveLength(1);
  }, 60_000);
});

describe("a batch of runs on two BullMQ worker processes, one killed with SIGKILL", () => {
  it("completes every run exactly once; no unsafe call runs twice", async () => {
    const dir = tempDir();
    const name = `batch-${randomUUID()}`;
    const runs = 16;
    const mode = `many:${runs}:150`;
    const doomed = startChild(name, dir, mode);
    const survivor = startChild(name, dir, mode);
    const exited = new Promise((resolve) => doomed.on("exit", (_code, signal) => resolve(signal)));
    await waitForEffect(dir, (line) => line.startsWith("start charge_card"), "the first charge");
    await new Promise((resolve) => setTimeout(resolve, 400));
    doomed.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");
    expect(survivor.exitCode).toBeNull();

    const producer = await createBullmqQueue({ connection: { url: redis.url }, name });
    cleanups.push(() => producer.close());
    for (let index = 0; index < runs; index++) expect(await producer.result(`run-${index}`)).toBe("ok");
    const lines = effectsLog(dir);
    for (let index = 0; index < runs; index++) {
      const of = (prefix: string) => lines.filter((line) => line.startsWith(`${prefix} run-${index}:`));
      expect(lines.filter((line) => line === `settled run-${index} completed`)).toHaveLength(1);
      // An unsafe call starts once per idempotency key: never re-run after a crash.
      const chargeKeys = of("start charge_card").map((line) => line.split(" ")[2]);
      expect(new Set(chargeKeys).size).toBe(chargeKeys.length);
      expect(of("effect charge_card").length).toBeGreaterThanOrEqual(1);
      expect(of("effect send_receipt").length).toBeGreaterThanOrEqual(1);
    }
    expect(await producer.list({ status: "completed" })).toHaveLength(runs);
    const resumed = (await producer.list()).filter((run) => run.attempts > 1).length;
    console.log(`[bullmq-crash] batch of ${runs}: ${resumed} run(s) resumed after the kill`);
    expect(resumed).toBeGreaterThanOrEqual(1); // the killed worker held runs: they moved over
  }, 90_000);
});
