/**
 * Limits on what a queue takes and tolerance of what it finds, on every engine the tests can start
 * (embedded, BullMQ on a real redis-server and PostgreSQL 15): a run's serialized input over
 * `maxPayloadBytes` (default 1 MiB) is refused at enqueue with `RunPayloadTooLargeError` naming
 * both sizes; a BullMQ job whose data is not a run (null, or without its fields) is skipped and
 * reported by `list`, `get` and `prune`, and failed by `take`, instead of breaking them.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ForgeError } from "../../src/core/errors.ts";
import {
  type BullmqRunQueue,
  createBullmqQueue,
  createEmbeddedQueue,
  createPostgresQueue,
  DEFAULT_MAX_PAYLOAD_BYTES,
  RunPayloadTooLargeError,
  type RunQueue,
} from "../../src/queue/index.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { startTestPostgresServer, type TestPostgresServer } from "../helpers/postgres-server.ts";
import { startTestRedisServer, type TestRedisServer } from "../helpers/redis-server.ts";

let redis: TestRedisServer;
let postgres: TestPostgresServer;
let redisClient: Redis;
let sql: pg.Client;
beforeAllOrFail(async () => {
  [redis, postgres] = await Promise.all([startTestRedisServer(), startTestPostgresServer()]);
  redisClient = new Redis(redis.port, "127.0.0.1");
  sql = new pg.Client({ connectionString: postgres.url });
  await sql.connect();
}, 60_000);
afterAll(async () => {
  redisClient?.disconnect();
  await sql?.end();
  await Promise.all([redis?.stop(), postgres?.stop()]);
});

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface QueueSettings {
  maxPayloadBytes?: number;
  onWarning?: (message: string) => void;
}

/** How to open a queue on each engine, and (BullMQ) how to overwrite a job's stored data. */
const engines: {
  engine: string;
  open: (settings: QueueSettings) => Promise<RunQueue>;
}[] = [
  {
    engine: "embedded",
    open: async (settings) => {
      const dir = mkdtempSync(join(tmpdir(), "forge-payload-"));
      const queue = await createEmbeddedQueue({ dir, ...settings });
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      return queue;
    },
  },
  {
    engine: "Redis",
    open: (settings) =>
      createBullmqQueue({ connection: { url: redis.url }, name: `test-${randomUUID()}`, ...settings }),
  },
  {
    engine: "PostgreSQL",
    open: (settings) =>
      createPostgresQueue({ connection: { url: postgres.url }, name: `test-${randomUUID()}`, ...settings }),
  },
];

/** A message whose serialized run input (`{"workflow":"echo","message":…}`) is exactly `bytes`. */
function messageOfInput(bytes: number): string {
  const overhead = Buffer.byteLength(JSON.stringify({ workflow: "echo", message: "" }));
  return "x".repeat(bytes - overhead);
}

async function refusal(promise: Promise<unknown>): Promise<RunPayloadTooLargeError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!(error instanceof RunPayloadTooLargeError)) {
    throw new Error(`expected RunPayloadTooLargeError, got ${String(error)}`);
  }
  return error;
}

describe.each(engines)("the payload limit on the $engine queue", ({ open }) => {
  async function openQueue(settings: QueueSettings = {}): Promise<RunQueue> {
    const queue = await open(settings);
    cleanups.push(() => queue.close());
    return queue;
  }

  it("takes a run of exactly 1 MiB of input by default and refuses one byte more, naming both sizes", async () => {
    const queue = await openQueue();
    const atLimit = await queue.enqueue("echo", messageOfInput(DEFAULT_MAX_PAYLOAD_BYTES), { runId: "at" });
    expect(atLimit.status).toBe("waiting");

    const error = await refusal(
      queue.enqueue("echo", messageOfInput(DEFAULT_MAX_PAYLOAD_BYTES + 1), { runId: "over" }),
    );
    expect(error).toBeInstanceOf(ForgeError);
    expect(error.name).toBe("RunPayloadTooLargeError");
    expect(error).toMatchObject({
      runId: "over",
      limitBytes: DEFAULT_MAX_PAYLOAD_BYTES,
      sizeBytes: DEFAULT_MAX_PAYLOAD_BYTES + 1,
    });
    expect(error.message).toContain(`${DEFAULT_MAX_PAYLOAD_BYTES + 1} bytes`);
    expect(error.message).toContain(`limit of ${DEFAULT_MAX_PAYLOAD_BYTES} bytes`);
    // Nothing of the refused run reached the store.
    expect(await queue.get("over")).toBeUndefined();
    expect((await queue.list()).map((run) => run.runId)).toEqual(["at"]);
  });

  it("counts prompt variables and multi-byte characters, against a configured limit", async () => {
    const queue = await openQueue({ maxPayloadBytes: 200 });
    // 60 three-byte characters: 180 bytes in UTF-8, 60 in string length.
    await queue.enqueue("echo", "€".repeat(40), { runId: "small" });
    const byCharacters = await refusal(queue.enqueue("echo", "€".repeat(60), { runId: "euro" }));
    expect(byCharacters.sizeBytes).toBeGreaterThan(180);
    expect(byCharacters.limitBytes).toBe(200);
    const byVars = await refusal(
      queue.enqueue("echo", "short", { runId: "vars", promptVars: { city: "P".repeat(200) } }),
    );
    expect(byVars.sizeBytes).toBeGreaterThan(200);
    expect((await queue.list()).map((run) => run.runId)).toEqual(["small"]);
  });

  it("lifts the limit with Infinity and refuses a limit that is not a positive whole number", async () => {
    const queue = await openQueue({ maxPayloadBytes: Number.POSITIVE_INFINITY });
    const big = await queue.enqueue("echo", messageOfInput(DEFAULT_MAX_PAYLOAD_BYTES + 1024), {
      runId: "big",
    });
    expect(big.message.length).toBeGreaterThan(DEFAULT_MAX_PAYLOAD_BYTES);
    for (const maxPayloadBytes of [0, -1, 1.5, Number.NaN]) {
      await expect(open({ maxPayloadBytes })).rejects.toThrow(/maxPayloadBytes must be a positive/);
    }
  });
});

/** Overwrite the stored data of BullMQ job `runId` with the JSON `data`. */
const bullmqStores = [
  {
    store: "Redis",
    open: (settings: QueueSettings) =>
      createBullmqQueue({ connection: { url: redis.url }, name: `test-${randomUUID()}`, ...settings }),
    overwrite: (queue: BullmqRunQueue, _name: string, runId: string, data: string) =>
      redisClient.hset(queue.key(runId), "data", data).then(() => undefined),
  },
  {
    store: "PostgreSQL",
    open: (settings: QueueSettings & { name: string }) =>
      createPostgresQueue({ connection: { url: postgres.url }, ...settings }),
    overwrite: (_queue: BullmqRunQueue, name: string, runId: string, data: string) =>
      sql
        .query("UPDATE bullmq.job SET data = $3 WHERE queue = $1 AND id = $2", [name, runId, data])
        .then(() => undefined),
  },
];

describe.each(bullmqStores)(
  "a job that is not a run, on the BullMQ queue on $store",
  ({ open, overwrite }) => {
    async function openQueue(): Promise<{ queue: BullmqRunQueue; name: string; warnings: string[] }> {
      const name = `test-${randomUUID()}`;
      const warnings: string[] = [];
      const queue = await open({ name, onWarning: (message) => warnings.push(message) });
      cleanups.push(() => queue.close());
      return { queue, name, warnings };
    }

    it("is skipped and reported by list, get and prune; the runs around it are listed", async () => {
      const { queue, name, warnings } = await openQueue();
      await queue.enqueue("echo", "first", { runId: "r1" });
      await queue.enqueue("echo", "broken", { runId: "null-data" });
      await queue.enqueue("echo", "also broken", { runId: "no-fields" });
      await queue.enqueue("echo", "last", { runId: "r2" });
      await overwrite(queue, name, "null-data", "null");
      await overwrite(queue, name, "no-fields", JSON.stringify({ hello: "world" }));

      expect((await queue.list()).map((run) => run.runId)).toEqual(["r1", "r2"]);
      expect((await queue.list({ status: "waiting" })).map((run) => run.runId)).toEqual(["r1", "r2"]);
      expect(warnings).toEqual([
        expect.stringMatching(
          /job null-data is not a run \(its data (is null|has no string runId)\); skipped it/,
        ),
        expect.stringMatching(/job no-fields is not a run \(its data has no string runId\); skipped it/),
      ]);
      expect(await queue.get("null-data")).toBeUndefined();
      expect(await queue.get("r1")).toMatchObject({ runId: "r1", message: "first" });
      // Reported once per job, not at every listing.
      expect(warnings).toHaveLength(2);
      expect(await queue.prune({ olderThanMs: 0, status: ["cancelled"] })).toBe(0);
    });

    it("is failed by take, which hands out the next run instead", async () => {
      const { queue, name, warnings } = await openQueue();
      await queue.enqueue("echo", "broken", { runId: "null-data", priority: 5 });
      await queue.enqueue("echo", "fine", { runId: "r1" });
      await overwrite(queue, name, "null-data", "null");

      const lease = await queue.take("worker");
      expect(lease?.job).toMatchObject({ runId: "r1", message: "fine" });
      await lease?.complete("done");
      expect(warnings).toContainEqual(expect.stringMatching(/job null-data is not a run .*; failed it/));
      expect((await queue.list()).map((run) => [run.runId, run.status])).toEqual([["r1", "completed"]]);
    });
  },
);
