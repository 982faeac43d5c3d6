/**
 * `forge worker`, `forge enqueue` and `forge runs` as real processes on one queue directory (the
 * worker holds the directory, the producer and `runs` open it from other processes), on a real
 * redis-server through `--queue redis://…` (with `runs retry`) and on a real PostgreSQL 15 through
 * `--queue postgres://…`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createBullmqQueue } from "../../src/queue/index.ts";
import { startPoolServer } from "../clients/helpers/pool-server.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { exitOf, spawnForge, waitForOutput } from "../helpers/forge-cli.ts";
import { startTestPostgresServer, type TestPostgresServer } from "../helpers/postgres-server.ts";
import { startTestRedisServer, type TestRedisServer } from "../helpers/redis-server.ts";

const REGISTRY = new URL("../fixtures/durable/registry.ts", import.meta.url).pathname;
const dirs: string[] = [];
let redis: TestRedisServer;
let postgres: TestPostgresServer;
beforeAllOrFail(async () => {
  redis = await startTestRedisServer();
  postgres = await startTestPostgresServer();
}, 60_000);
afterAll(async () => {
  await redis?.stop();
  await postgres?.stop();
});
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function forge(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const run = spawnForge(args);
  const code = await exitOf(run.child);
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}

describe("forge worker / enqueue / runs", () => {
  it("works a run enqueued from another process, lists it, and stops on SIGINT", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-cli-queue-"));
    dirs.push(dir);
    const queue = join(dir, "queue");
    process.env.FORGE_TEST_DIR = dir;
    const worker = spawnForge(["worker", "--registry", REGISTRY, "--queue", queue]);
    try {
      await waitForOutput(worker.output, /forge worker on .*: shop/);
      const enqueued = await forge([
        "enqueue",
        "shop",
        "Buy A1",
        "--queue",
        queue,
        "--run-id",
        "r1",
        "--wait",
      ]);
      expect(enqueued).toMatchObject({ code: 0, stdout: 'r1\n"ok"\n' });
      const again = await forge(["enqueue", "shop", "Buy A1", "--queue", queue, "--run-id", "r1"]);
      expect(again.stdout).toBe("r1\n");
      const listed = await forge(["runs", "ls", "--queue", queue]);
      expect(listed.stdout).toBe("r1\tcompleted\tshop\tattempts=1\n");
      const shown = await forge(["runs", "show", "r1", "--queue", queue]);
      expect(JSON.parse(shown.stdout)).toMatchObject({ runId: "r1", status: "completed", result: "ok" });
      const missing = await forge(["runs", "show", "nope", "--queue", queue]);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain("No run nope");
      await waitForOutput(worker.output, /r1 completed/);
    } finally {
      delete process.env.FORGE_TEST_DIR;
      worker.child.kill("SIGINT");
    }
    expect(await exitOf(worker.child)).toBe(0);
  }, 90_000);

  it("works a run on a redis:// queue, retries a failed one, and refuses to retry a completed one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-cli-queue-"));
    dirs.push(dir);
    const queue = `${redis.url}/0`;
    process.env.FORGE_TEST_DIR = dir;
    const worker = spawnForge(["worker", "--registry", REGISTRY, "--queue", queue]);
    try {
      await waitForOutput(worker.output, /forge worker on redis:\/\/127\.0\.0\.1:\d+\/0: shop/);
      const enqueued = await forge([
        "enqueue",
        "shop",
        "Buy A1",
        "--queue",
        queue,
        "--run-id",
        "r1",
        "--wait",
      ]);
      expect(enqueued).toMatchObject({ code: 0, stdout: 'r1\n"ok"\n' });
      // A run naming no workflow of the registry fails; retried, the worker takes it again.
      const failing = await forge(["enqueue", "nope", "?", "--queue", queue, "--run-id", "n1", "--wait"]);
      expect(failing.code).toBe(1);
      expect(failing.stderr).toContain("No workflow 'nope'");
      const listed = await forge(["runs", "ls", "--queue", queue]);
      expect(listed.stdout).toBe("r1\tcompleted\tshop\tattempts=1\nn1\tfailed\tnope\tattempts=1\n");
      const retried = await forge(["runs", "retry", "n1", "--queue", queue]);
      expect(retried).toMatchObject({ code: 0, stdout: "retrying: n1\n" });
      await waitForOutput(worker.output, /n1 failed[\s\S]*n1 failed/);
      const shown = await forge(["runs", "show", "n1", "--queue", queue]);
      expect(JSON.parse(shown.stdout)).toMatchObject({ runId: "n1", status: "failed", attempts: 1 }); // counted again from the retry
      const refused = await forge(["runs", "retry", "r1", "--queue", queue]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain("only a failed or cancelled run can be retried");
    } finally {
      delete process.env.FORGE_TEST_DIR;
      worker.child.kill("SIGINT");
    }
    expect(await exitOf(worker.child)).toBe(0);
  }, 90_000);

  it("works a run on a postgres:// queue", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-cli-queue-"));
    dirs.push(dir);
    process.env.FORGE_TEST_DIR = dir;
    const worker = spawnForge(["worker", "--registry", REGISTRY, "--queue", postgres.url]);
    try {
      await waitForOutput(
        worker.output,
        /forge worker on postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres: shop/,
      );
      const enqueued = await forge([
        "enqueue",
        "shop",
        "Buy A1",
        "--queue",
        postgres.url,
        "--run-id",
        "p1",
        "--wait",
      ]);
      expect(enqueued).toMatchObject({ code: 0, stdout: 'p1\n"ok"\n' });
      const listed = await forge(["runs", "ls", "--queue", postgres.url]);
      expect(listed.stdout).toBe("p1\tcompleted\tshop\tattempts=1\n");
    } finally {
      delete process.env.FORGE_TEST_DIR;
      worker.child.kill("SIGINT");
    }
    expect(await exitOf(worker.child)).toBe(0);
  }, 90_000);

  it("infers through a pool of llama-server endpoints with --endpoint (repeatable) and their --endpoint-api-key, and refuses a bad one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-cli-queue-"));
    dirs.push(dir);
    const queue = join(dir, "queue");
    // The shop run's two turns: both tool calls, then finish once their results are in the history.
    const server = await startPoolServer({
      totalSlots: 2,
      apiKey: "endpoint-key",
      reply: ({ messages }) =>
        messages.some((message) => message.role === "tool")
          ? { role: "assistant", content: null, tool_calls: [openAICall("c3", "finish", {})] }
          : {
              role: "assistant",
              content: null,
              tool_calls: [
                openAICall("c1", "charge_card", { order: "A1" }),
                openAICall("c2", "send_receipt", { order: "A1" }),
              ],
            },
    });
    process.env.FORGE_TEST_DIR = dir;
    const worker = spawnForge([
      "worker",
      "--registry",
      REGISTRY,
      "--queue",
      queue,
      "--endpoint",
      server.url,
      "--endpoint-api-key",
      "endpoint-key",
    ]);
    try {
      await waitForOutput(worker.output, new RegExp(`inferring through ${server.url}`));
      const enqueued = await forge([
        "enqueue",
        "shop",
        "Buy A1",
        "--queue",
        queue,
        "--run-id",
        "p1",
        "--wait",
      ]);
      expect(enqueued).toMatchObject({ code: 0, stdout: 'p1\n"ok"\n' });
      // Both LLM calls went to the endpoint, not to the registry runner's scripted client.
      expect(server.received).toEqual(["Buy A1", "Buy A1"]);
    } finally {
      delete process.env.FORGE_TEST_DIR;
      worker.child.kill("SIGINT");
      await server.stop();
    }
    expect(await exitOf(worker.child)).toBe(0);
    const bad = await forge(["worker", "--registry", REGISTRY, "--queue", queue, "--endpoint", "gpu-1:8080"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("is not an http(s) URL of a llama-server");
  }, 90_000);

  it("refuses a run over the payload limit, naming the limit and the size (--max-payload-bytes)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-cli-queue-"));
    dirs.push(dir);
    const queue = join(dir, "queue");
    const message = "x".repeat(300);
    const refused = await forge(["enqueue", "shop", message, "--queue", queue, "--max-payload-bytes", "200"]);
    expect(refused.code).not.toBe(0);
    // {"workflow":"shop","message":"x…x"}: 32 bytes around the 300 of the message.
    expect(refused.stderr).toMatch(/its payload is 332 bytes .* over the queue's limit of 200 bytes/);
    const taken = await forge(["enqueue", "shop", message, "--queue", queue, "--run-id", "big"]);
    expect(taken).toMatchObject({ code: 0, stdout: "big\n" });
  }, 60_000);

  it("refuses a --queue URL of an engine it does not know", async () => {
    const result = await forge(["runs", "ls", "--queue", "http://127.0.0.1:1"]);
    expect(result.code).toBe(2); // a usage error
    expect(result.stderr).toContain("redis://, rediss://, postgres:// or postgresql:// URL or a directory");
  }, 60_000);

  it("says what a registry module must export", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-cli-queue-"));
    dirs.push(dir);
    const result = await forge([
      "worker",
      "--registry",
      new URL("../fixtures/durable/shop.ts", import.meta.url).pathname,
      "--queue",
      join(dir, "q"),
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("must export (default, or as `registry`) the result of defineRegistry");
  }, 60_000);
});

describe("forge runs prune", () => {
  it("prunes through the worker holding an embedded queue's directory, and by itself once none does", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-cli-queue-"));
    dirs.push(dir);
    const queue = join(dir, "queue");
    process.env.FORGE_TEST_DIR = dir;
    const worker = spawnForge(["worker", "--registry", REGISTRY, "--queue", queue]);
    try {
      await waitForOutput(worker.output, /forge worker on .*: shop/);
      const enqueue = ["enqueue", "shop", "Buy A1", "--queue", queue, "--run-id", "r1", "--wait"];
      expect(await forge(enqueue)).toMatchObject({ code: 0, stdout: 'r1\n"ok"\n' });
      expect(await forge(["runs", "prune", "--older-than", "7d", "--queue", queue])).toMatchObject({
        code: 0,
        stdout: "removed 0 runs\n",
      });
      expect(
        await forge(["runs", "prune", "--older-than", "0", "--status", "failed,cancelled", "--queue", queue]),
      ).toMatchObject({ code: 0, stdout: "removed 0 runs\n" });
      expect(await forge(["runs", "prune", "--older-than", "0s", "--queue", queue])).toMatchObject({
        code: 0,
        stdout: "removed 1 run\n",
      });
      expect((await forge(["runs", "ls", "--queue", queue])).stdout).toBe("");
      // The pruned id is a new run: the worker takes it (and fails it: its script answers one run).
      expect(await forge(["enqueue", "shop", "Buy B2", "--queue", queue, "--run-id", "r1"])).toMatchObject({
        code: 0,
        stdout: "r1\n",
      });
      await waitForOutput(worker.output, /r1 failed/);
      const shown = await forge(["runs", "show", "r1", "--queue", queue]);
      expect(JSON.parse(shown.stdout)).toMatchObject({ runId: "r1", message: "Buy B2", status: "failed" });
    } finally {
      delete process.env.FORGE_TEST_DIR;
      worker.child.kill("SIGINT");
    }
    expect(await exitOf(worker.child)).toBe(0);
    expect(await forge(["runs", "prune", "--older-than", "0ms", "--queue", queue])).toMatchObject({
      code: 0,
      stdout: "removed 1 run\n",
    });
  }, 90_000);

  it("lists the runs of a redis:// queue around a job whose data is null, reporting it on stderr", async () => {
    const url = `${redis.url}/6`;
    const queue = await createBullmqQueue({ connection: { url }, onWarning: () => {} });
    const raw = new Redis(url);
    try {
      await queue.enqueue("shop", "one", { runId: "first" });
      await queue.enqueue("shop", "two", { runId: "nulled" });
      await queue.enqueue("shop", "three", { runId: "last" });
      await raw.hset(queue.key("nulled"), "data", "null");
    } finally {
      raw.disconnect();
      await queue.close();
    }
    const listed = await forge(["runs", "ls", "--queue", url]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toBe("first\twaiting\tshop\tattempts=0\nlast\twaiting\tshop\tattempts=0\n");
    expect(listed.stderr).toContain("job nulled is not a run (its data is null); skipped it");
  }, 60_000);

  it("prunes a redis:// queue by status", async () => {
    const url = `${redis.url}/5`;
    const queue = await createBullmqQueue({ connection: { url } });
    try {
      await queue.enqueue("shop", "one", { runId: "done" });
      await (await queue.take("test"))?.complete("ok");
      await queue.enqueue("shop", "two", { runId: "broken" });
      await (await queue.take("test"))?.fail({ name: "Boom", message: "no" });
      await queue.enqueue("shop", "three", { runId: "waits" });
    } finally {
      await queue.close();
    }
    expect(
      await forge(["runs", "prune", "--older-than", "0", "--status", "failed", "--queue", url]),
    ).toMatchObject({ code: 0, stdout: "removed 1 run\n" });
    expect((await forge(["runs", "ls", "--queue", url])).stdout).toBe(
      "done\tcompleted\tshop\tattempts=1\nwaits\twaiting\tshop\tattempts=0\n",
    );
    expect(await forge(["runs", "prune", "--older-than", "12h", "--queue", url])).toMatchObject({
      code: 0,
      stdout: "removed 0 runs\n",
    });
  }, 60_000);

  it("refuses a bad duration or status as a usage error", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-cli-queue-"));
    dirs.push(dir);
    const queue = join(dir, "queue");
    const duration = await forge(["runs", "prune", "--older-than", "7 days", "--queue", queue]);
    expect(duration.code).toBe(2);
    expect(duration.stderr).toContain("'7 days' is not a duration");
    const status = await forge([
      "runs",
      "prune",
      "--older-than",
      "1h",
      "--status",
      "completed,waiting",
      "--queue",
      queue,
    ]);
    expect(status.code).toBe(2);
    expect(status.stderr).toContain("'waiting' is not a finished status");
    const missing = await forge(["runs", "prune", "--queue", queue]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("--older-than");
  }, 60_000);
});

function openAICall(id: string, name: string, args: Record<string, unknown>) {
  return { id, type: "function", function: { name, arguments: JSON.stringify(args) } };
}
