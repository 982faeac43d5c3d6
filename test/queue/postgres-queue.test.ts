/**
 * The BullMQ run queue on a real PostgreSQL 15 (started by the test on 127.0.0.1), what is
 * PostgreSQL's own: BullMQ's `job` table layout that the fenced write relies on, the connection
 * error, a producer opened from its URL, a cancel reaching a lease held elsewhere at its renewal.
 * What every engine promises is the RunQueue contract (contract/); what BullMQ does the same on
 * Redis, bullmq-backends.test.ts.
 */
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  type BullmqRunQueue,
  createPostgresQueue,
  createRunQueue,
  defineRegistry,
  LeaseLostError,
  type PostgresQueueOptions,
  RunQueueConnectionError,
  type StoredCheckpoint,
  startWorker,
} from "../../src/queue/index.ts";
import { echo } from "../fixtures/durable/echo.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { startTestPostgresServer, type TestPostgresServer } from "../helpers/postgres-server.ts";
import { checkpointOf } from "../helpers/stored-checkpoint.ts";

let postgres: TestPostgresServer;
let sql: pg.Client;
beforeAllOrFail(async () => {
  postgres = await startTestPostgresServer();
  sql = new pg.Client({ connectionString: postgres.url });
  await sql.connect();
}, 60_000);
afterAll(async () => {
  await sql?.end();
  await postgres?.stop();
});

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A queue with its own name, so tests never see each other's runs. */
async function openQueue(options: Partial<PostgresQueueOptions> = {}): Promise<BullmqRunQueue> {
  const queue = await createPostgresQueue({
    connection: { url: postgres.url },
    name: `test-${randomUUID()}`,
    ...options,
  });
  cleanups.push(() => queue.close());
  return queue;
}

/** BullMQ's row of a run, read straight from its table. */
async function rowOf(name: string, runId: string) {
  const { rows } = await sql.query(
    "SELECT state, lock_token, locked_until_ms, priority, data FROM bullmq.job WHERE queue = $1 AND id = $2",
    [name, runId],
  );
  return rows[0] as
    | {
        state: string;
        lock_token: string | null;
        locked_until_ms: string;
        priority: number;
        data: { checkpoint: StoredCheckpoint } & Record<string, unknown>;
      }
    | undefined;
}

describe("BullMQ's PostgreSQL layout (what the fenced write relies on)", () => {
  it("keeps the lease's token in job.lock_token and the run in job.data; another token's writes are refused", async () => {
    const name = `layout-${randomUUID()}`;
    const queue = await openQueue({ name });
    await queue.enqueue("echo", "x", { runId: "k1" });
    const lease = await queue.take("worker-a");
    expect(lease).not.toBeNull();
    const row = await rowOf(name, "k1");
    expect(row?.state).toBe("active");
    expect(row?.lock_token).toMatch(/^worker-a:/);
    expect(Number(row?.locked_until_ms)).toBeGreaterThan(Date.now());
    await lease?.saveCheckpoint(checkpointOf(1));
    expect((await rowOf(name, "k1"))?.data).toMatchObject({
      runId: "k1",
      workflow: "echo",
      checkpoint: { meta: { seq: 1 } },
    });
    // Another holder's token in the row: this lease's writes are refused and it stops.
    await sql.query("UPDATE bullmq.job SET lock_token = 'someone-else' WHERE queue = $1 AND id = 'k1'", [
      name,
    ]);
    await expect(lease?.saveCheckpoint(checkpointOf(2))).rejects.toBeInstanceOf(LeaseLostError);
    expect(lease?.signal.aborted).toBe(true);
    expect((await rowOf(name, "k1"))?.data.checkpoint.meta.seq).toBe(1);
  });

  it("refuses a write once the lock expired, even before the stall checker hands the run out", async () => {
    const name = `expired-${randomUUID()}`;
    const queue = await openQueue({ name, lockMs: 60_000 });
    await queue.enqueue("echo", "x", { runId: "e1" });
    const lease = await queue.take("w");
    await lease?.saveCheckpoint(checkpointOf(1));
    await sql.query("UPDATE bullmq.job SET locked_until_ms = $2 WHERE queue = $1 AND id = 'e1'", [
      name,
      Date.now() - 1,
    ]);
    await expect(lease?.saveCheckpoint(checkpointOf(2))).rejects.toBeInstanceOf(LeaseLostError);
    expect((await rowOf(name, "e1"))?.data.checkpoint.meta.seq).toBe(1);
  });

  it("maps forge priorities to BullMQ priorities of 1 or more, and hands runs out by priority then FIFO", async () => {
    const name = `prio-${randomUUID()}`;
    const queue = await openQueue({ name });
    await queue.enqueue("echo", "low-1", { runId: "a" });
    await queue.enqueue("echo", "high", { runId: "b", priority: 5 });
    await queue.enqueue("echo", "low-2", { runId: "c" });
    await queue.enqueue("echo", "lowest", { runId: "d", priority: -3 });
    const a = await rowOf(name, "a");
    const b = await rowOf(name, "b");
    expect(b?.priority).toBeGreaterThanOrEqual(1);
    expect(b?.priority).toBeLessThan(a?.priority ?? 0);
    const order: string[] = [];
    for (let lease = await queue.take("w"); lease; lease = await queue.take("w")) {
      order.push(lease.job.runId);
      await lease.complete(null);
    }
    expect(order).toEqual(["b", "a", "c", "d"]);
  });
});

describe("the BullMQ queue on PostgreSQL", () => {
  it("says where PostgreSQL was expected when it cannot connect", async () => {
    await expect(
      createPostgresQueue({
        connection: { url: "postgres://postgres@127.0.0.1:1/postgres" },
        connectTimeoutMs: 1_000,
      }),
    ).rejects.toBeInstanceOf(RunQueueConnectionError);
    await expect(createPostgresQueue({ connection: { url: postgres.url }, poolSize: 0 })).rejects.toThrow(
      /poolSize must be a whole number of connections, 1 or more; got 0/,
    );
  });

  it("runs an enqueued workflow on a worker and hands back its result; enqueue is idempotent", async () => {
    const name = `smoke-${randomUUID()}`;
    // The producer opens it from its URL, as `forge enqueue --queue postgres://…` does.
    const producer = await createRunQueue({ postgres: postgres.url, name });
    cleanups.push(() => producer.close());
    const queue = await openQueue({ name });
    const { workflow, runner, seen } = echo();
    const worker = startWorker({ queue, registry: defineRegistry({ workflows: [workflow], runner }) });
    cleanups.push(() => worker.close());
    const first = await producer.enqueue("echo", "hello", { runId: "s1" });
    expect(await producer.enqueue("echo", "other", { runId: "s1" })).toEqual(first);
    expect(await producer.result("s1")).toBe("answered hello");
    expect(seen).toEqual(["hello"]);
    const record = await producer.get("s1");
    expect(record).toMatchObject({ status: "completed", attempts: 1, result: "answered hello" });
    expect(record?.checkpoint?.meta.runId).toBe("s1");
    expect((await producer.list({ status: "completed" })).map((run) => run.runId)).toEqual(["s1"]);
  });

  it("cancels a waiting run (no worker gets it) and an active one (its lease stops, its writes are refused)", async () => {
    const name = `cancel-${randomUUID()}`;
    const workerSide = await openQueue({ name, lockMs: 400 });
    const producerSide = await openQueue({ name });
    await producerSide.enqueue("echo", "now", { runId: "c1" });
    await producerSide.enqueue("echo", "later", { runId: "c2" });
    const lease = await workerSide.take("w");
    expect(lease?.job.runId).toBe("c1");
    await producerSide.cancel("c2");
    await producerSide.cancel("c1");
    expect((await producerSide.get("c2"))?.status).toBe("cancelled");
    await expect(producerSide.result("c2")).rejects.toThrow(/cancelled/);
    // The lease held by the other queue object sees it at its next renewal.
    const deadline = Date.now() + 5_000;
    while (!lease?.signal.aborted && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(lease?.signal.reason).toBeInstanceOf(LeaseLostError);
    await expect(lease?.saveCheckpoint(checkpointOf(1))).rejects.toThrow(/cancelled/);
    expect(await workerSide.take("w")).toBeNull();
    expect((await producerSide.get("c1"))?.status).toBe("cancelled");
    expect((await producerSide.get("c2"))?.status).toBe("cancelled");
  });
});
