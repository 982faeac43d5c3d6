/**
 * `RunQueue.prune` on every engine, each on its real store (a directory, redis-server, PostgreSQL
 * 15): completed, failed and cancelled runs (cancelled while waiting and while active), some of
 * them finished two hours ago (their finish time moved back in the store), pruned by age and by
 * status; waiting and active runs left alone; a pruned run id enqueues again as a new run. The
 * embedded queue's client asks the worker holding the directory, or prunes itself when none does.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  type BullmqRunQueue,
  createBullmqQueue,
  createEmbeddedQueue,
  createPostgresQueue,
  type RunQueue,
} from "../../src/queue/index.ts";
import { assertPruneOptions, isPrunable, type PruneOptions } from "../../src/queue/run-queue.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { startTestPostgresServer, type TestPostgresServer } from "../helpers/postgres-server.ts";
import { startTestRedisServer, type TestRedisServer } from "../helpers/redis-server.ts";

let redis: TestRedisServer;
let redisClient: Redis;
let postgres: TestPostgresServer;
let sql: pg.Client;
beforeAllOrFail(async () => {
  redis = await startTestRedisServer();
  redisClient = new Redis(redis.port, "127.0.0.1");
  postgres = await startTestPostgresServer();
  sql = new pg.Client({ connectionString: postgres.url });
  await sql.connect();
}, 60_000);
afterAll(async () => {
  redisClient?.disconnect();
  await sql?.end();
  await redis?.stop();
  await postgres?.stop();
});

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const TWO_HOURS = 2 * 3_600_000;

/** An engine under test: how to open a queue, and how to move runs' finish back in its store. */
interface Engine {
  name: string;
  open(): Promise<RunQueue>;
  /** Move the finish (or cancel) time of `runIds` back by `ms`; may reopen the queue. */
  backdate(queue: RunQueue, runIds: string[], ms: number): Promise<RunQueue>;
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "forge-prune-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const embedded: Engine = {
  name: "embedded",
  async open() {
    const dir = tempDir();
    const queue = await createEmbeddedQueue({ dir });
    dirs.set(queue, dir);
    cleanups.push(() => queue.close());
    return queue;
  },
  async backdate(queue, runIds, ms) {
    // The worker holds its runs in memory: close it, edit the files, open the directory again.
    const dir = dirs.get(queue) as string;
    await queue.close();
    for (const runId of runIds) {
      const path = join(dir, "runs", `${runId}.json`);
      const run = JSON.parse(readFileSync(path, "utf8")) as { finishedAt: number };
      writeFileSync(path, JSON.stringify({ ...run, finishedAt: run.finishedAt - ms }));
    }
    const reopened = await createEmbeddedQueue({ dir });
    dirs.set(reopened, dir);
    cleanups.push(() => reopened.close());
    return reopened;
  },
};
const dirs = new Map<RunQueue, string>();

const names = new Map<RunQueue, string>();
const onRedis: Engine = {
  name: "BullMQ on Redis",
  async open() {
    const name = `prune-${randomUUID()}`;
    const queue = await createBullmqQueue({ connection: { host: "127.0.0.1", port: redis.port }, name });
    names.set(queue, name);
    cleanups.push(() => queue.close());
    return queue;
  },
  async backdate(queue, runIds, ms) {
    const bullmq = queue as BullmqRunQueue;
    for (const runId of runIds) {
      const key = bullmq.key(runId);
      const finishedOn = await redisClient.hget(key, "finishedOn");
      if (finishedOn) {
        // BullMQ ages finished runs by the score in the completed or failed set.
        await redisClient.hset(key, "finishedOn", `${Number(finishedOn) - ms}`);
        for (const set of ["completed", "failed"]) {
          if ((await redisClient.zscore(bullmq.key(set), runId)) !== null) {
            await redisClient.zadd(bullmq.key(set), Number(finishedOn) - ms, runId);
          }
        }
      } else {
        const cancelledAt = await redisClient.hget(key, "forgeCancelled");
        await redisClient.hset(key, "forgeCancelled", `${Number(cancelledAt) - ms}`);
      }
    }
    return queue;
  },
};

const onPostgres: Engine = {
  name: "BullMQ on PostgreSQL",
  async open() {
    const name = `prune-${randomUUID()}`;
    const queue = await createPostgresQueue({ connection: { url: postgres.url }, name });
    names.set(queue, name);
    cleanups.push(() => queue.close());
    return queue;
  },
  async backdate(queue, runIds, ms) {
    await sql.query(
      `UPDATE bullmq.job
          SET finished_at_ms = finished_at_ms - $3::bigint,
              data = CASE WHEN data ? 'forgeCancelledAt'
                          THEN jsonb_set(data, '{forgeCancelledAt}', to_jsonb((data->>'forgeCancelledAt')::bigint - $3::bigint))
                          ELSE data END
        WHERE queue = $1 AND id = ANY($2::text[])`,
      [names.get(queue), runIds, ms],
    );
    return queue;
  },
};

/** Enqueue `runId` and take it (it must be the run taken). */
async function takeOne(queue: RunQueue, runId: string, priority = 0) {
  await queue.enqueue("echo", `message of ${runId}`, { runId, priority });
  const lease = await queue.take("test-worker");
  expect(lease?.job.runId).toBe(runId);
  if (!lease) throw new Error("no lease");
  return lease;
}

async function idsOf(queue: RunQueue): Promise<string[]> {
  return (await queue.list()).map((run) => `${run.runId}:${run.status}`).sort();
}

describe.each([embedded, onRedis, onPostgres])("prune on $name", (engine) => {
  it("removes exactly the old finished runs of the asked statuses, never waiting or active ones", async () => {
    let queue = await engine.open();
    await (await takeOne(queue, "c1")).complete("one");
    await (await takeOne(queue, "c2")).complete("two");
    await (await takeOne(queue, "f1")).fail({ name: "Boom", message: "f1 failed" });
    await (await takeOne(queue, "f2")).fail({ name: "Boom", message: "f2 failed" });
    await takeOne(queue, "x2");
    await queue.cancel("x2"); // cancelled while active
    for (const runId of ["x1", "x3"]) {
      await queue.enqueue("echo", `message of ${runId}`, { runId });
      await queue.cancel(runId); // cancelled while waiting
    }
    queue = await engine.backdate(queue, ["c1", "f1", "x1", "x2"], TWO_HOURS);
    // Above the cancelled waiting runs, so a take leaves them be.
    const active = await takeOne(queue, "a", 100);
    await queue.enqueue("echo", "still waiting", { runId: "w" });
    expect(await idsOf(queue)).toEqual([
      "a:active",
      "c1:completed",
      "c2:completed",
      "f1:failed",
      "f2:failed",
      "w:waiting",
      "x1:cancelled",
      "x2:cancelled",
      "x3:cancelled",
    ]);

    expect(await queue.prune({ olderThanMs: 3 * 3_600_000 })).toBe(0);
    expect(await queue.prune({ olderThanMs: 3_600_000 })).toBe(4);
    expect(await idsOf(queue)).toEqual([
      "a:active",
      "c2:completed",
      "f2:failed",
      "w:waiting",
      "x3:cancelled",
    ]);
    expect(await queue.get("c1")).toBeUndefined();

    expect(await queue.prune({ olderThanMs: 0, status: ["failed"] })).toBe(1);
    expect(await queue.prune({ olderThanMs: 0, status: ["cancelled"] })).toBe(1);
    expect(await idsOf(queue)).toEqual(["a:active", "c2:completed", "w:waiting"]);
    expect(await queue.prune({ olderThanMs: 0 })).toBe(1);
    expect(await queue.prune({ olderThanMs: 0 })).toBe(0);
    expect(await idsOf(queue)).toEqual(["a:active", "w:waiting"]);

    // The active run's lease was not disturbed.
    await active.complete("done");
    expect(await queue.get("a")).toMatchObject({ status: "completed", result: "done" });

    // A pruned id is a new run.
    const again = await queue.enqueue("echo", "a new c1", { runId: "c1" });
    expect(again).toMatchObject({ runId: "c1", status: "waiting", message: "a new c1", attempts: 0 });
    expect(again.result).toBeUndefined();
    expect(again.finishedAt).toBeUndefined();
  }, 60_000);

  it("refuses bad options with a RangeError that says what is wrong", async () => {
    const queue = await engine.open();
    await expect(queue.prune({ olderThanMs: -1 })).rejects.toThrow(/olderThanMs must be a whole number.*-1/);
    await expect(queue.prune({ olderThanMs: 1.5 })).rejects.toThrow(RangeError);
    await expect(queue.prune({ olderThanMs: Number.POSITIVE_INFINITY })).rejects.toThrow(RangeError);
    await expect(
      queue.prune({ olderThanMs: 0, status: ["waiting"] } as unknown as PruneOptions),
    ).rejects.toThrow(/"waiting" is not a finished status/);
    await expect(queue.prune({ olderThanMs: 0, status: [] })).rejects.toThrow(/non-empty list/);
  });
});

describe("prune on an embedded queue's client", () => {
  async function finishedRuns(dir: string): Promise<RunQueue> {
    const worker = await createEmbeddedQueue({ dir });
    cleanups.push(() => worker.close());
    await (await takeOne(worker, "done-1")).complete(1);
    await (await takeOne(worker, "done-2")).fail({ name: "Boom", message: "no" });
    await worker.enqueue("echo", "waits", { runId: "waits" });
    return worker;
  }

  it("asks the worker holding the directory, which answers at its next take", async () => {
    const dir = tempDir();
    const worker = await finishedRuns(dir);
    const client = await createEmbeddedQueue({ dir, mode: "client" });
    cleanups.push(() => client.close());
    const pruned = client.prune({ olderThanMs: 0 });
    // The worker's next take carries out the request (and takes the waiting run).
    const lease = await worker.take("test-worker");
    expect(lease?.job.runId).toBe("waits");
    expect(await pruned).toBe(2);
    expect((await client.list()).map((run) => run.runId)).toEqual(["waits"]);
    expect(await client.get("done-2")).toBeUndefined();
    expect(readdirSync(join(dir, "prune"))).toEqual([]); // request and answer both gone
    // Bad options are refused before any request is left for the worker.
    await expect(client.prune({ olderThanMs: -5 })).rejects.toThrow(RangeError);
    expect(readdirSync(join(dir, "prune"))).toEqual([]);
    // The worker forgot them too: the id enqueues again as a new run, from either side.
    expect(await client.enqueue("echo", "again", { runId: "done-1" })).toMatchObject({ status: "waiting" });
    expect(await worker.get("done-1")).toMatchObject({ status: "waiting", message: "again" });
  });

  it("prunes itself, under the directory's lock, when no worker holds it", async () => {
    const dir = tempDir();
    const worker = await finishedRuns(dir);
    await worker.close();
    const client = await createEmbeddedQueue({ dir, mode: "client" });
    cleanups.push(() => client.close());
    expect(await client.prune({ olderThanMs: 0, status: ["completed"] })).toBe(1);
    const reopened = await createEmbeddedQueue({ dir });
    cleanups.push(() => reopened.close());
    expect((await reopened.list()).map((run) => `${run.runId}:${run.status}`)).toEqual([
      "done-2:failed",
      "waits:waiting",
    ]);
  });
});

describe("prune and a retry asked for first", () => {
  it("leaves a failed run whose retry a client asked for, on an embedded queue with no worker", async () => {
    const dir = tempDir();
    const worker = await createEmbeddedQueue({ dir });
    await (await takeOne(worker, "failed-1")).fail({ name: "Boom", message: "no" });
    await (await takeOne(worker, "failed-2")).fail({ name: "Boom", message: "no" });
    await worker.close();
    const client = await createEmbeddedQueue({ dir, mode: "client" });
    cleanups.push(() => client.close());
    await client.retry("failed-1");
    expect(await client.prune({ olderThanMs: 0 })).toBe(1);
    const reopened = await createEmbeddedQueue({ dir });
    cleanups.push(() => reopened.close());
    expect((await reopened.list()).map((run) => run.runId)).toEqual(["failed-1"]);
    // The retry is carried out when the directory is next worked: the run is taken again.
    expect((await reopened.take("test-worker"))?.job.runId).toBe("failed-1");
  });
});

describe("what prune removes (the decision)", () => {
  const all = assertPruneOptions({ olderThanMs: 0 }).status;
  it("takes finished runs of the asked statuses finished at or before the cutoff", () => {
    expect(isPrunable({ status: "completed", finishedAt: 1_000 }, all, 1_000)).toBe(true);
    expect(isPrunable({ status: "failed", finishedAt: 999 }, all, 1_000)).toBe(true);
    expect(isPrunable({ status: "cancelled", finishedAt: 1_001 }, all, 1_000)).toBe(false);
    expect(isPrunable({ status: "cancelled" }, all, 1_000)).toBe(false);
    expect(isPrunable({ status: "waiting", finishedAt: 1 }, all, 1_000)).toBe(false);
    expect(isPrunable({ status: "active", finishedAt: 1 }, all, 1_000)).toBe(false);
    const failedOnly = assertPruneOptions({ olderThanMs: 0, status: ["failed"] }).status;
    expect(isPrunable({ status: "completed", finishedAt: 1 }, failedOnly, 1_000)).toBe(false);
    expect(isPrunable({ status: "failed", finishedAt: 1 }, failedOnly, 1_000)).toBe(true);
  });
});
