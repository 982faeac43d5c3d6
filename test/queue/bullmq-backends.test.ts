/**
 * What the BullMQ run queue does the same on both of its stores, each real (redis-server and
 * PostgreSQL 15 on 127.0.0.1), beyond the RunQueue contract (contract/: lock renewal, a silent
 * worker's run resumed, retries): a run failed for good past maxStalledCount and retried with its
 * whole stall allowance. Store-specific layout and connection errors: bullmq-queue.test.ts and
 * postgres-queue.test.ts.
 */
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  type BullmqQueueOptions,
  type BullmqRunQueue,
  createBullmqQueue,
  createPostgresQueue,
  type RunLease,
} from "../../src/queue/index.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { startTestPostgresServer, type TestPostgresServer } from "../helpers/postgres-server.ts";
import { startTestRedisServer, type TestRedisServer } from "../helpers/redis-server.ts";

let redis: TestRedisServer;
let postgres: TestPostgresServer;
beforeAllOrFail(async () => {
  [redis, postgres] = await Promise.all([startTestRedisServer(), startTestPostgresServer()]);
}, 60_000);
afterAll(async () => {
  await Promise.all([redis?.stop(), postgres?.stop()]);
});

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type QueueOptions = Omit<BullmqQueueOptions, "connection">;

/** A store: how to open a queue on it (closed by the caller). */
const stores = [
  {
    store: "Redis",
    open: (options: QueueOptions) => createBullmqQueue({ connection: { url: redis.url }, ...options }),
  },
  {
    store: "PostgreSQL",
    open: (options: QueueOptions) => createPostgresQueue({ connection: { url: postgres.url }, ...options }),
  },
];

/** `queue.take(workerId)` until it hands out a run or `ms` have passed. */
async function takeWithin(queue: BullmqRunQueue, workerId: string, ms: number): Promise<RunLease | null> {
  let lease = await queue.take(workerId);
  for (const until = Date.now() + ms; !lease && Date.now() < until; ) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    lease = await queue.take(workerId);
  }
  return lease;
}

describe.each(stores)("the BullMQ queue on $store", ({ open }) => {
  /** A queue with its own name unless given one, closed after the test. */
  async function openQueue(options: Partial<QueueOptions> = {}): Promise<BullmqRunQueue> {
    const queue = await open({ name: `test-${randomUUID()}`, ...options });
    cleanups.push(() => queue.close());
    return queue;
  }

  it("fails a run for good once it stalled more than maxStalledCount times; retried, it is taken again", async () => {
    const options = {
      name: `stall-limit-${randomUUID()}`,
      lockMs: 300,
      stalledIntervalMs: 100,
      maxStalledCount: 1,
    };
    const producer = await openQueue({ name: options.name });
    await producer.enqueue("echo", "x", { runId: "s2" });
    // Two workers in turn take the run and go silent; each one's stall checker frees the last one's.
    for (let round = 0; round < 2; round++) {
      const dying = await open(options);
      expect((await takeWithin(dying, "dying", 10_000))?.job.runId).toBe("s2");
      await dying.close();
    }
    // The next worker's stall checker marks it; taking it then fails it for good.
    const checker = await openQueue(options);
    const deadline = Date.now() + 10_000;
    while ((await producer.get("s2"))?.status !== "failed" && Date.now() < deadline) {
      expect(await checker.take("checker")).toBeNull();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await expect(producer.result("s2")).rejects.toThrow(/stalled/);
    expect(await producer.get("s2")).toMatchObject({ status: "failed", error: { name: "RunStalledError" } });
    // Retried, it has its whole stall allowance again (BullMQ's stall count and deferred failure
    // are cleared): one more silent worker sends it back to waiting, not to failed.
    expect(await producer.retry("s2")).toMatchObject({ status: "waiting" });
    const last = await open(options);
    expect((await takeWithin(last, "dying", 10_000))?.job.runId).toBe("s2");
    await last.close();
    const again = await takeWithin(checker, "checker", 10_000);
    expect(again?.job.runId).toBe("s2");
    await again?.complete("ok");
    expect(await producer.result("s2")).toBe("ok");
  }, 30_000);
});
