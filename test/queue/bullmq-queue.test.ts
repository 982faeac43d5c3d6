/**
 * The BullMQ run queue against a real redis-server on 127.0.0.1, what is Redis's own: BullMQ's key
 * layout that the fenced write relies on, the connection error, a worker's hand-back on close, a
 * cancel reaching a lease at its renewal, a lost lock. What every engine promises is the RunQueue
 * contract (contract/); what BullMQ does the same on PostgreSQL, bullmq-backends.test.ts.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool } from "../../src/core/tools.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import {
  type BullmqQueueOptions,
  type BullmqRunQueue,
  createBullmqQueue,
  defineRegistry,
  LeaseLostError,
  RunQueueConnectionError,
  startWorker,
} from "../../src/queue/index.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { startTestRedisServer, type TestRedisServer } from "../helpers/redis-server.ts";
import { checkpointOf } from "../helpers/stored-checkpoint.ts";

let redis: TestRedisServer;
let client: Redis;
beforeAllOrFail(async () => {
  redis = await startTestRedisServer();
  client = new Redis(redis.port, "127.0.0.1");
}, 30_000);
afterAll(async () => {
  client?.disconnect();
  await redis?.stop();
});

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A queue with its own name, so tests never see each other's runs. */
async function openQueue(options: Partial<BullmqQueueOptions> = {}): Promise<BullmqRunQueue> {
  const queue = await createBullmqQueue({
    connection: { host: "127.0.0.1", port: redis.port },
    name: `test-${randomUUID()}`,
    ...options,
  });
  cleanups.push(() => queue.close());
  return queue;
}

describe("the BullMQ queue's key layout (what the fenced write relies on)", () => {
  it("keeps the lease's token in <prefix>:<name>:<runId>:lock and the run in the job hash's data field", async () => {
    const name = `layout-${randomUUID()}`;
    const queue = await openQueue({ name });
    await queue.enqueue("echo", "x", { runId: "k1" });
    const lease = await queue.take("worker-a");
    expect(lease).not.toBeNull();
    const token = await client.get(`bull:${name}:k1:lock`);
    expect(token).toMatch(/^worker-a:/);
    expect(await client.pttl(`bull:${name}:k1:lock`)).toBeGreaterThan(0);
    await lease?.saveCheckpoint(checkpointOf(1));
    const data = JSON.parse((await client.hget(`bull:${name}:k1`, "data")) ?? "null");
    expect(data).toMatchObject({ runId: "k1", workflow: "echo", checkpoint: { meta: { seq: 1 } } });
    // Another holder's token in the lock key: this lease's writes are refused and it stops.
    await client.set(`bull:${name}:k1:lock`, "someone-else", "PX", 10_000);
    await expect(lease?.saveCheckpoint(checkpointOf(2))).rejects.toBeInstanceOf(LeaseLostError);
    expect(lease?.signal.aborted).toBe(true);
    const after = JSON.parse((await client.hget(`bull:${name}:k1`, "data")) ?? "null");
    expect(after.checkpoint.meta.seq).toBe(1);
  });

  it("maps forge priorities to BullMQ priorities of 1 or more (0 would run before all of them)", async () => {
    const name = `prio-${randomUUID()}`;
    const queue = await openQueue({ name });
    await queue.enqueue("echo", "x", { runId: "p0" });
    await queue.enqueue("echo", "x", { runId: "p9", priority: 9 });
    const p0 = Number(await client.hget(`bull:${name}:p0`, "priority"));
    const p9 = Number(await client.hget(`bull:${name}:p9`, "priority"));
    expect(p9).toBeGreaterThanOrEqual(1);
    expect(p9).toBeLessThan(p0);
    await expect(queue.enqueue("echo", "x", { runId: "big", priority: 2 ** 21 })).rejects.toThrow(
      /priority must be an integer/,
    );
  });
});

describe("the BullMQ queue", () => {
  it("says where Redis was expected when it cannot connect", async () => {
    await expect(
      createBullmqQueue({ connection: { host: "127.0.0.1", port: 1 }, connectTimeoutMs: 1_000 }),
    ).rejects.toBeInstanceOf(RunQueueConnectionError);
  });

  it("hands a run under way back when the worker closes; the next worker resumes it from its checkpoint", async () => {
    const name = `handback-${randomUUID()}`;
    const queue = await openQueue({ name });
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow = defineTool({
      name: "answer",
      description: "Answer",
      parameters: z.object({ text: z.string() }),
      execute: async ({ text }, context) => {
        await Promise.race([
          gate,
          new Promise((resolve) => context.signal?.addEventListener("abort", resolve)),
        ]);
        return `answered ${text}`;
      },
    });
    const workflow = defineWorkflow({
      name: "echo",
      description: "Answer slowly",
      tools: [slow],
      terminalTool: "answer",
      systemPrompt: "Answer.",
    });
    const scripted = () =>
      new ScriptedClient(Array.from({ length: 5 }, () => toolCall("answer", { text: "x" })));
    const first = startWorker({
      queue,
      registry: defineRegistry({
        workflows: [workflow],
        runner: new WorkflowRunner({ client: scripted(), contextManager: { maybeCompact: (m) => m } }),
      }),
    });
    await queue.enqueue("echo", "x", { runId: "h1" });
    const deadline = Date.now() + 5_000;
    while ((await queue.get("h1"))?.checkpoint === undefined && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await first.close();
    expect(await queue.get("h1")).toMatchObject({ status: "waiting", attempts: 1 });
    release();
    const second = startWorker({
      queue,
      registry: defineRegistry({
        workflows: [workflow],
        runner: new WorkflowRunner({ client: scripted(), contextManager: { maybeCompact: (m) => m } }),
      }),
    });
    cleanups.push(() => second.close());
    expect(await queue.result("h1")).toBe("answered x");
    expect((await queue.get("h1"))?.attempts).toBe(2);
  });

  it("stops a lease held elsewhere at its next renewal when the run is cancelled", async () => {
    const name = `cancel-${randomUUID()}`;
    const workerSide = await openQueue({ name, lockMs: 400 });
    const producerSide = await openQueue({ name });
    await producerSide.enqueue("echo", "x", { runId: "f2" });
    const lease = await workerSide.take("w");
    await producerSide.cancel("f2");
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(lease?.signal.aborted).toBe(true);
    expect(lease?.signal.reason).toBeInstanceOf(LeaseLostError);
    await expect(lease?.saveCheckpoint(checkpointOf(1))).rejects.toThrow(/cancelled/);
    expect((await producerSide.get("f2"))?.status).toBe("cancelled");
  });

  it("aborts the lease when its lock is lost, and refuses its writes", async () => {
    const name = `lost-${randomUUID()}`;
    const queue = await openQueue({ name, lockMs: 400 });
    await queue.enqueue("echo", "x", { runId: "l1" });
    const lease = await queue.take("w");
    await lease?.saveCheckpoint(checkpointOf(1));
    await client.del(`bull:${name}:l1:lock`);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(lease?.signal.aborted).toBe(true);
    await expect(lease?.complete("late")).rejects.toBeInstanceOf(LeaseLostError);
    expect((await queue.get("l1"))?.status).toBe("active");
  });
});
