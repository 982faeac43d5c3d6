/**
 * The embedded run queue and its workers: idempotent enqueue, priority then FIFO, results,
 * cancellation, graceful hand-back, one process per directory, and a worker process killed with
 * SIGKILL mid-run whose run another process resumes from its last checkpoint.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { createEmbeddedQueue, defineRegistry, type RunQueue, startWorker } from "../../src/queue/index.ts";
import { ScriptedClient } from "../../src/testing/index.ts";
import { echo } from "../fixtures/durable/echo.ts";
import { shopScript, shopWorkflow } from "../fixtures/durable/shop.ts";
import { checkpointOf } from "../helpers/stored-checkpoint.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "forge-queue-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function openQueue(dir = tempDir()): Promise<RunQueue> {
  const queue = await createEmbeddedQueue({ dir });
  cleanups.push(() => queue.close());
  return queue;
}

describe("the embedded queue", () => {
  it("enqueues idempotently by run id", async () => {
    const queue = await openQueue();
    const first = await queue.enqueue("echo", "one", { runId: "r1" });
    const again = await queue.enqueue("echo", "two", { runId: "r1" });
    expect(again).toEqual(first);
    expect(await queue.list()).toHaveLength(1);
    await expect(queue.enqueue("echo", "x", { runId: "no spaces" })).rejects.toThrow(/runId must be/);
  });

  it("hands runs out by priority, then first in first out", async () => {
    const queue = await openQueue();
    await queue.enqueue("echo", "low-1", { runId: "a" });
    await queue.enqueue("echo", "high", { runId: "b", priority: 5 });
    await queue.enqueue("echo", "low-2", { runId: "c" });
    const order: string[] = [];
    for (let lease = await queue.take("w"); lease; lease = await queue.take("w")) {
      order.push(lease.job.runId);
      await lease.complete(null);
    }
    expect(order).toEqual(["b", "a", "c"]);
  });

  it("runs enqueued workflows on a worker and hands back results", async () => {
    const queue = await openQueue();
    const { workflow, runner, seen } = echo();
    const worker = startWorker({
      queue,
      registry: defineRegistry({ workflows: [workflow], runner }),
      concurrency: 2,
    });
    cleanups.push(() => worker.close());
    await Promise.all(["x", "y", "z"].map((text) => queue.enqueue("echo", text, { runId: `run-${text}` })));
    expect(await queue.result("run-y")).toBe("answered y");
    expect(await queue.result("run-z")).toBe("answered z");
    expect(seen.sort()).toEqual(["x", "y", "z"]);
    expect((await queue.get("run-x"))?.status).toBe("completed");
  });

  it("fails a run naming an unknown workflow, with the reason", async () => {
    const queue = await openQueue();
    const { workflow, runner } = echo();
    const worker = startWorker({ queue, registry: defineRegistry({ workflows: [workflow], runner }) });
    cleanups.push(() => worker.close());
    await queue.enqueue("nope", "?", { runId: "bad" });
    await expect(queue.result("bad")).rejects.toThrow(/No workflow 'nope'/);
  });

  it("keeps a second process (or queue) off the same directory", async () => {
    const dir = tempDir();
    await openQueue(dir);
    await expect(createEmbeddedQueue({ dir })).rejects.toThrow(/open in another process/);
  });

  it("cancels a waiting run; result() rejects", async () => {
    const queue = await openQueue();
    await queue.enqueue("echo", "later", { runId: "c1" });
    await queue.cancel("c1");
    await expect(queue.result("c1")).rejects.toThrow(/cancelled/);
    expect(await queue.take("w")).toBeNull();
  });

  it("fences writes: a lease of a cancelled run cannot write", async () => {
    const queue = await openQueue();
    await queue.enqueue("echo", "x", { runId: "f1" });
    const lease = await queue.take("w");
    await queue.cancel("f1");
    expect(lease?.signal.aborted).toBe(true);
    await expect(lease?.complete("late")).rejects.toThrow(/lease is gone/);
    expect((await queue.get("f1"))?.status).toBe("cancelled");
  });

  it("retries a failed run and a cancelled one from their last checkpoint; refuses others", async () => {
    const queue = await openQueue();
    await queue.enqueue("echo", "x", { runId: "t1" });
    const first = await queue.take("w");
    await first?.saveCheckpoint(checkpointOf(3));
    await first?.fail({ name: "GuardrailError", message: "gave up" });
    expect(await queue.retry("t1")).toMatchObject({ status: "waiting", error: { name: "GuardrailError" } });
    const second = await queue.take("w");
    expect(second?.checkpoint?.meta.seq).toBe(3);
    expect(second?.attempts).toBe(1); // a retried run's allowance of backend retries starts again
    await second?.saveCheckpoint(checkpointOf(4));
    await queue.cancel("t1");
    const retried = await queue.retry("t1");
    expect(retried.status).toBe("waiting");
    expect(retried.error).toBeUndefined();
    const third = await queue.take("w");
    expect(third?.checkpoint?.meta.seq).toBe(4);
    await third?.complete("done");
    expect(await queue.result("t1")).toBe("done");
    await expect(queue.retry("t1")).rejects.toThrow(/completed: only a failed or cancelled run/);
    await expect(queue.retry("nope")).rejects.toThrow(/No run nope/);
  });
});

describe("a worker process killed with SIGKILL", () => {
  it("leaves its run to resume from the last checkpoint elsewhere; the charge is not repeated", async () => {
    const dir = tempDir();
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        new URL("../fixtures/durable/queue-child.ts", import.meta.url).pathname,
        dir,
        "send_receipt",
      ],
      { stdio: "inherit" },
    );
    const exited = new Promise((resolve) => child.on("exit", (_code, signal) => resolve(signal)));
    const log = () => {
      try {
        return readFileSync(join(dir, "effects.log"), "utf8").split("\n").filter(Boolean);
      } catch {
        return [];
      }
    };
    const deadline = Date.now() + 30_000;
    while (!log().some((line) => line.startsWith("start send_receipt"))) {
      if (Date.now() > deadline) throw new Error("the worker never reached send_receipt");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    child.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");

    // A new process takes over once the dead one's lock is stale.
    const queue = await createEmbeddedQueue({ dir: join(dir, "queue"), waitForLockMs: 15_000 });
    cleanups.push(() => queue.close());
    expect((await queue.get("run-1"))?.status).toBe("waiting");
    const runner = new WorkflowRunner({
      client: new ScriptedClient(shopScript().slice(1)),
      contextManager: { maybeCompact: (messages) => messages },
    });
    const worker = startWorker({
      queue,
      registry: defineRegistry({ workflows: [shopWorkflow(dir)], runner }),
    });
    cleanups.push(() => worker.close());
    expect(await queue.result("run-1")).toBe("ok");
    const lines = log();
    expect(lines.filter((line) => line.startsWith("effect charge_card"))).toHaveLength(1);
    expect(lines.filter((line) => line.startsWith("effect send_receipt"))).toHaveLength(1);
    expect((await queue.get("run-1"))?.attempts).toBe(2);
  }, 60_000);
});

describe("a client-mode queue (another process, no lock)", () => {
  it("enqueues into a directory a worker holds, reads results, and cancels through the worker", async () => {
    const dir = tempDir();
    const workerQueue = await openQueue(dir);
    const client = await createEmbeddedQueue({ dir, mode: "client" });
    cleanups.push(() => client.close());
    const first = await client.enqueue("echo", "from a client", { runId: "c-1" });
    expect(await client.enqueue("echo", "again", { runId: "c-1" })).toEqual(first);
    await client.enqueue("echo", "never", { runId: "c-2", priority: -1 });
    await client.cancel("c-2");
    await expect(client.take("w")).rejects.toThrow(/cannot take runs/);

    const { workflow, runner } = echo();
    const worker = startWorker({
      queue: workerQueue,
      registry: defineRegistry({ workflows: [workflow], runner }),
    });
    cleanups.push(() => worker.close());
    expect(await client.result("c-1")).toBe("answered from a client");
    await expect(client.result("c-2")).rejects.toThrow(/cancelled/);
    expect((await client.list()).map((run) => [run.runId, run.status])).toEqual([
      ["c-1", "completed"],
      ["c-2", "cancelled"],
    ]);
    // A client's retry is carried out by the worker: the cancelled run goes back and completes.
    expect((await client.retry("c-2")).status).toBe("cancelled"); // requested, not yet done
    const deadline = Date.now() + 10_000;
    while ((await client.get("c-2"))?.status === "cancelled" && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await client.result("c-2")).toBe("answered never");
  });
});

describe("the embedded queue's checks (the same rules as the BullMQ engine's)", () => {
  it("refuses run ids that could name a file elsewhere, or that BullMQ would refuse, and bad priorities", async () => {
    const dir = tempDir();
    const queue = await openQueue(dir);
    const client = await createEmbeddedQueue({ dir, mode: "client" });
    cleanups.push(() => client.close());
    for (const runId of ["../../x", "a:b", "17", ""]) {
      await expect(queue.enqueue("echo", "x", { runId })).rejects.toThrow(/runId must be/);
      await expect(client.cancel(runId)).rejects.toThrow(/runId must be/);
      await expect(queue.get(runId)).rejects.toThrow(/runId must be/);
    }
    for (const priority of [1.5, Number.NaN, 2 ** 20]) {
      await expect(queue.enqueue("echo", "x", { runId: "p", priority })).rejects.toThrow(/priority must be/);
    }
  });

  it("rejects result() once the queue is closed instead of waiting forever", async () => {
    const dir = tempDir();
    const queue = await createEmbeddedQueue({ dir });
    await queue.enqueue("echo", "x", { runId: "w1" });
    const settled = expect(queue.result("w1")).rejects.toThrow(/closed/);
    await queue.close();
    await settled;
  });

  it("a worker whose queue fails to read says so and goes on", async () => {
    const queue = await openQueue();
    const { workflow, runner } = echo();
    const errors: unknown[] = [];
    let failures = 2;
    const flaky: RunQueue = {
      ...queue,
      enqueue: queue.enqueue.bind(queue),
      get: queue.get.bind(queue),
      list: queue.list.bind(queue),
      result: queue.result.bind(queue),
      cancel: queue.cancel.bind(queue),
      close: queue.close.bind(queue),
      take: (workerId) => (failures-- > 0 ? Promise.reject(new Error("disk hiccup")) : queue.take(workerId)),
    };
    const worker = startWorker({
      queue: flaky,
      registry: defineRegistry({ workflows: [workflow], runner }),
      pollMs: 10,
      onError: (error) => errors.push(error),
    });
    cleanups.push(() => worker.close());
    await queue.enqueue("echo", "after", { runId: "after" });
    expect(await queue.result("after")).toBe("answered after");
    expect(errors.map((error) => (error as Error).message)).toEqual(["disk hiccup", "disk hiccup"]);
  });
});
