/**
 * The embedded run queue, what is its own (what every engine promises is the RunQueue contract,
 * contract/): one process per directory, a worker process killed with SIGKILL mid-run whose run
 * another process resumes from its last checkpoint, client-mode queues, a worker whose queue
 * fails to read.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import {
  createEmbeddedQueue,
  defineRegistry,
  type RunQueue,
  RunQueueStateError,
  startWorker,
} from "../../src/queue/index.ts";
import { ScriptedClient } from "../../src/testing/index.ts";
import { echo } from "../fixtures/durable/echo.ts";
import { shopScript, shopWorkflow } from "../fixtures/durable/shop.ts";

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
  it("keeps a second process (or queue) off the same directory", async () => {
    const dir = tempDir();
    await openQueue(dir);
    await expect(createEmbeddedQueue({ dir })).rejects.toThrow(RunQueueStateError);
    await expect(createEmbeddedQueue({ dir })).rejects.toThrow(/open in another process/);
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
    await expect(client.take("w")).rejects.toThrow(RunQueueStateError);
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
