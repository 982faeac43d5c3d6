/**
 * BullMQ workers on PostgreSQL that crash, against a real PostgreSQL 15: a worker process killed
 * with SIGKILL mid-tool leaves its run to another worker within the lock and stall window, and the
 * run completes exactly once with no effect repeated; one frozen with SIGSTOP past its lock and
 * woken up has its writes refused; a batch on two worker processes, one killed.
 * The same child (test/fixtures/durable/bullmq-child.ts) and shop workflow as the Redis crash tests.
 */
import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { createPostgresQueue } from "../../src/queue/index.ts";
import { type ScriptStep, toolCall } from "../../src/testing/index.ts";
import { shopScript } from "../fixtures/durable/shop.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { crashHarness, effectsLog, waitForLine } from "../helpers/crash-harness.ts";
import { startTestPostgresServer, type TestPostgresServer } from "../helpers/postgres-server.ts";

const LOCK_MS = 2_000;
const STALLED_INTERVAL_MS = 1_000;

let postgres: TestPostgresServer;
beforeAllOrFail(async () => {
  postgres = await startTestPostgresServer();
}, 60_000);
afterAll(async () => {
  await postgres?.stop();
});

const { cleanups, tempDir, spawnFixture, startShopWorker } = crashHarness("forge-postgres-crash-");

/** Waits up to 60 s: a child's start and the lock and stall window. */
const waitForEffect = (dir: string, test: (line: string) => boolean, what: string) =>
  waitForLine(dir, test, what, 60_000);

/** A worker process (test/fixtures/durable/bullmq-child.ts) on queue `name`. */
function startChild(name: string, dir: string, mode: string): ChildProcess {
  return spawnFixture(new URL("../fixtures/durable/bullmq-child.ts", import.meta.url), [
    postgres.url,
    name,
    dir,
    String(LOCK_MS),
    String(STALLED_INTERVAL_MS),
    mode,
  ]);
}

/** A worker in this process on queue `name`, answering with `script`. */
function startLocalWorker(name: string, dir: string, script: ScriptStep[]) {
  return startShopWorker(
    { postgres: postgres.url, name, lockMs: LOCK_MS, stalledIntervalMs: STALLED_INTERVAL_MS },
    dir,
    script,
  );
}

describe("a BullMQ worker process on PostgreSQL killed with SIGKILL mid-tool", () => {
  it.each([
    { hang: "send_receipt", note: "after charge_card returned: neither call runs twice" },
    { hang: "charge_card", note: "inside the unsafe charge_card: that call is never re-run" },
  ])(
    "killed in $hang ($note): the run completes once on another worker",
    async ({ hang }) => {
      const dir = tempDir();
      const name = `crash-${randomUUID()}`;
      const child = startChild(name, dir, `hang:${hang}`);
      const exited = new Promise((resolve) => child.on("exit", (_code, signal) => resolve(signal)));
      await waitForEffect(dir, (line) => line.startsWith(`start ${hang}`), `the worker to reach ${hang}`);
      child.kill("SIGKILL");
      expect(await exited).toBe("SIGKILL");
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
    90_000,
  );
});

describe("a BullMQ worker on PostgreSQL frozen with SIGSTOP past its lock", () => {
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

    // Woken up, the frozen worker finishes its inference and tries to write its checkpoint before
    // the tool batch: refused, it stops without charging the card again.
    child.kill("SIGCONT");
    await waitForEffect(dir, (line) => line === "settled run-1 lost", "the woken worker to give the run up");
    const lines = effectsLog(dir);
    expect(lines.filter((line) => line.startsWith("start charge_card"))).toHaveLength(1);
    expect(lines.filter((line) => line.startsWith("effect charge_card"))).toHaveLength(1);
    expect(lines.filter((line) => line.startsWith("effect send_receipt"))).toHaveLength(1);
    expect(lines.filter((line) => line.startsWith("settled run-1 completed"))).toHaveLength(0);
    expect(await queue.get("run-1")).toMatchObject({ status: "completed", attempts: 2, result: "ok" });
  }, 90_000);
});

describe("a batch of runs on two BullMQ worker processes on PostgreSQL, one killed with SIGKILL", () => {
  it("completes every run exactly once; no unsafe call runs twice", async () => {
    const dir = tempDir();
    const name = `batch-${randomUUID()}`;
    const runs = 8;
    const mode = `many:${runs}:150`;
    const doomed = startChild(name, dir, mode);
    const survivor = startChild(name, dir, mode);
    const exited = new Promise((resolve) => doomed.on("exit", (_code, signal) => resolve(signal)));
    await waitForEffect(dir, (line) => line.startsWith("start charge_card"), "the first charge");
    await new Promise((resolve) => setTimeout(resolve, 400));
    doomed.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");
    expect(survivor.exitCode).toBeNull();

    const producer = await createPostgresQueue({ connection: { url: postgres.url }, name });
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
    console.log(`[postgres-crash] batch of ${runs}: ${resumed} run(s) resumed after the kill`);
  }, 120_000);
});
