/**
 * The embedded queue's files under bad conditions: run files written durably (fsync before the
 * rename, the directory after), an unreadable or hostile run file quarantined instead of fatal,
 * run ids checked where they are read, stray request files ignored, a full disk (node:fs mocked to
 * fail with ENOSPC) leaving no temp file and no run stuck active, and a second process taking the
 * directory over (fenced writes, QueueFencedError, the worker stopping).
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { defineTool } from "../../src/core/tools.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import {
  createEmbeddedQueue,
  defineRegistry,
  type EmbeddedRunQueue,
  QueueFencedError,
  startWorker,
} from "../../src/queue/index.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import { echo } from "../fixtures/durable/echo.ts";
import { exitOf, spawnForge } from "../helpers/forge-cli.ts";
import { checkpointOf } from "../helpers/stored-checkpoint.ts";

/** A disk that can fill up (every write then fails with ENOSPC), and a trace of durable-write calls. */
const disk = vi.hoisted(() => ({ full: false, trace: undefined as string[] | undefined }));
vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs")>();
  const paths = new Map<number, string>();
  const mocked = {
    openSync: (path: string, ...rest: unknown[]) => {
      const fd = (fs.openSync as (...args: unknown[]) => number)(path, ...rest);
      paths.set(fd, String(path));
      return fd;
    },
    writeSync: (fd: number, ...rest: unknown[]) => {
      if (disk.full)
        throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
      disk.trace?.push(`write ${paths.get(fd)}`);
      return (fs.writeSync as (...args: unknown[]) => number)(fd, ...rest);
    },
    writeFileSync: (...args: Parameters<typeof fs.writeFileSync>) => {
      if (disk.full)
        throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
      return fs.writeFileSync(...args);
    },
    fsyncSync: (fd: number) => {
      disk.trace?.push(`fsync ${paths.get(fd)}`);
      return fs.fsyncSync(fd);
    },
    renameSync: (from: string, to: string) => {
      disk.trace?.push(`rename ${from} ${to}`);
      return fs.renameSync(from, to);
    },
  };
  return { ...fs, ...mocked, default: { ...fs, ...mocked } };
});

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  disk.full = false;
  disk.trace = undefined;
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "forge-queue-hygiene-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function open(
  dir: string,
  options: { mode?: "client"; waitForLockMs?: number } = {},
): Promise<{ queue: EmbeddedRunQueue; warnings: string[] }> {
  const warnings: string[] = [];
  const queue = await createEmbeddedQueue({
    dir,
    ...options,
    onWarning: (message) => warnings.push(message),
  });
  cleanups.push(() => queue.close());
  return { queue, warnings };
}

/** A run record as a worker writes it, for files put in place by hand. */
const record = (runId: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    runId,
    workflow: "echo",
    message: "m",
    priority: 0,
    status: "waiting",
    attempts: 0,
    enqueuedAt: 1,
    ...extra,
  });

/** Files in `runs/` that are not run files (temp files a failed write left behind). */
const leftovers = (dir: string) =>
  readdirSync(join(dir, "runs")).filter((name) => !/^[^.].*\.json$/.test(name));

describe("durable writes", () => {
  it("fsyncs a run file before renaming it into place, and its directory after", async () => {
    const dir = tempDir();
    const { queue } = await open(dir);
    disk.trace = [];
    await queue.enqueue("echo", "m", { runId: "r1" });
    const trace = disk.trace;
    const runs = join(dir, "runs");
    const temporary = trace.find((line) => line.startsWith("write "))?.slice("write ".length) ?? "";
    expect(temporary).toMatch(/\/runs\/\.r1\.json\..*\.tmp$/);
    expect(trace).toEqual([
      `write ${temporary}`,
      `fsync ${temporary}`,
      `rename ${temporary} ${join(runs, "r1.json")}`,
      `fsync ${runs}`,
    ]);
  });
});

describe("unreadable and hostile run files", () => {
  it("quarantines a torn run file: the worker starts, list() and quarantined() report it, the rest runs", async () => {
    const dir = tempDir();
    const first = await createEmbeddedQueue({ dir });
    await first.enqueue("echo", "good", { runId: "good" });
    await first.close();
    writeFileSync(join(dir, "runs", "torn.json"), '{"runId":"torn","workflow":"ec');

    const { queue, warnings } = await open(dir);
    expect((await queue.list()).map((run) => run.runId)).toEqual(["good"]);
    const [moved, ...others] = await queue.quarantined();
    expect(others).toEqual([]);
    expect(moved).toMatchObject({ from: "runs/torn.json", reason: expect.stringMatching(/not JSON/) });
    expect(moved?.path.startsWith(join(dir, "quarantine"))).toBe(true);
    expect(existsSync(join(dir, "runs", "torn.json"))).toBe(false);
    expect(warnings).toEqual([
      expect.stringMatching(/runs\/torn\.json is unreadable \(not JSON.*moved aside/),
    ]);

    const { workflow, runner } = echo();
    const worker = startWorker({
      queue,
      registry: defineRegistry({ workflows: [workflow], runner }),
      pollMs: 20,
    });
    cleanups.push(() => worker.close());
    expect(await queue.result("good")).toBe("answered good");
  });

  it("`forge runs ls` lists the readable runs, says what it quarantined, and exits 0", async () => {
    const dir = tempDir();
    const first = await createEmbeddedQueue({ dir });
    await first.enqueue("echo", "good", { runId: "good" });
    await first.close();
    writeFileSync(join(dir, "runs", "torn.json"), "{");
    const ls = spawnForge(["runs", "ls", "--queue", dir]);
    expect(await exitOf(ls.child)).toBe(0);
    expect(ls.stdout()).toBe("good\twaiting\techo\tattempts=0\n");
    expect(ls.stderr()).toMatch(/quarantined runs\/torn\.json \(not JSON/);
  }, 30_000);

  it("quarantines a run file whose runId would name a file elsewhere, and writes nothing outside runs/", async () => {
    const dir = tempDir();
    const queueDir = join(dir, "a", "queue");
    mkdirSync(join(queueDir, "runs"), { recursive: true });
    // An active run: opening the directory as a worker rewrites it (to waiting), where its runId says.
    writeFileSync(join(queueDir, "runs", "x.json"), record("../../x", { status: "active", lease: "t" }));
    writeFileSync(join(queueDir, "runs", "y.json"), record("z"));
    // Not a run file at all: hidden, as temp files are (never read).
    writeFileSync(join(queueDir, "runs", "..json"), record(".."));
    const { queue } = await open(queueDir);
    expect(await queue.list()).toEqual([]);
    expect((await queue.quarantined()).map((file) => [file.from, file.reason]).sort()).toEqual([
      ["runs/x.json", expect.stringMatching(/^not a run record \(runId: /)],
      ["runs/y.json", 'its runId "z" is not its file name\'s'],
    ]);
    expect(readdirSync(join(dir, "a"))).toEqual(["queue"]);
    expect(readdirSync(dir)).toEqual(["a"]);
  });

  it("refuses the run ids . and .. on every path, worker and client", async () => {
    const dir = tempDir();
    const { queue } = await open(dir);
    const { queue: client } = await open(dir, { mode: "client" });
    for (const runId of [".", ".."]) {
      await expect(queue.enqueue("echo", "x", { runId })).rejects.toThrow(/runId must be/);
      await expect(client.enqueue("echo", "x", { runId })).rejects.toThrow(/runId must be/);
      await expect(client.cancel(runId)).rejects.toThrow(/runId must be/);
      await expect(client.retry(runId)).rejects.toThrow(/runId must be/);
      await expect(queue.get(runId)).rejects.toThrow(/runId must be/);
      await expect(queue.result(runId)).rejects.toThrow(/runId must be/);
    }
    // Dots inside an id are still fine (BullMQ's rules).
    expect((await queue.enqueue("echo", "x", { runId: "order.17" })).runId).toBe("order.17");
  });

  it("ignores a stray file (and a directory) in cancel/, retry/ and prune/ with one warning each; the worker works on", async () => {
    const dir = tempDir();
    const { queue, warnings } = await open(dir);
    writeFileSync(join(dir, "cancel", "not a run id"), "");
    mkdirSync(join(dir, "cancel", "sub"));
    writeFileSync(join(dir, "retry", "17"), "");
    mkdirSync(join(dir, "prune", "d.json"));
    const { workflow, runner } = echo();
    const errors: unknown[] = [];
    const worker = startWorker({
      queue,
      registry: defineRegistry({ workflows: [workflow], runner }),
      pollMs: 10,
      onError: (error) => errors.push(error),
    });
    cleanups.push(() => worker.close());
    await queue.enqueue("echo", "one", { runId: "one" });
    expect(await queue.result("one")).toBe("answered one");
    await new Promise((resolve) => setTimeout(resolve, 100)); // more takes: no more warnings
    await queue.enqueue("echo", "two", { runId: "two" });
    expect(await queue.result("two")).toBe("answered two");
    expect(errors).toEqual([]);
    expect(warnings.sort()).toEqual([
      expect.stringMatching(/^ignoring cancel\/not a run id: its name is not a run id/),
      expect.stringMatching(/^ignoring cancel\/sub: /),
      "ignoring prune/d.json: not a file",
      expect.stringMatching(/^ignoring retry\/17: its name is not a run id/),
    ]);
  });
});

describe("a full disk", () => {
  it("a client's enqueue fails whole: no run, no temp file", async () => {
    const dir = tempDir();
    const { queue: client } = await open(dir, { mode: "client" });
    disk.full = true;
    await expect(client.enqueue("echo", "x", { runId: "r1" })).rejects.toThrow(/ENOSPC/);
    disk.full = false;
    expect(readdirSync(join(dir, "runs"))).toEqual([]);
    expect(await client.get("r1")).toBeUndefined();
  });

  it("a lease whose checkpoint cannot be written stops; its run waits again at the next take, no restart", async () => {
    const dir = tempDir();
    const { queue, warnings } = await open(dir);
    await queue.enqueue("echo", "x", { runId: "r1" });
    const lease = await queue.take("w");
    await lease?.saveCheckpoint(checkpointOf(1));
    disk.full = true;
    await expect(lease?.saveCheckpoint(checkpointOf(2))).rejects.toThrow(/ENOSPC/);
    expect(lease?.signal.aborted).toBe(true);
    await expect(lease?.complete("late")).rejects.toThrow(/lease is gone \(a write failed/);
    expect(leftovers(dir)).toEqual([]);
    expect((await queue.get("r1"))?.status).toBe("active");
    disk.full = false;
    // The next take after the pause (1 s) puts it back, then hands it out again from checkpoint 1.
    await new Promise((resolve) => setTimeout(resolve, 1_050));
    const again = await queue.take("w");
    expect(again?.job.runId).toBe("r1");
    expect(again?.checkpoint?.meta.seq).toBe(1);
    await again?.complete("done");
    expect(await queue.result("r1")).toBe("done");
    expect(warnings).toEqual([
      expect.stringMatching(/run r1: a write failed \(ENOSPC.*wait again/),
      expect.stringMatching(/run r1 waits again/),
    ]);
  });

  it("runs a worker could not settle while the disk was full finish once it has room, without a restart", async () => {
    const dir = tempDir();
    const { queue } = await open(dir);
    // The terminal tool fills the disk once per run, for 300 ms: the run's settle write fails.
    const filled = new Set<string>();
    const answer = defineTool({
      name: "answer",
      description: "Answer",
      parameters: z.object({ text: z.string() }),
      execute: ({ text }) => {
        if (!filled.has(text)) {
          filled.add(text);
          disk.full = true;
          setTimeout(() => {
            disk.full = false;
          }, 300);
        }
        return `answered ${text}`;
      },
    });
    const workflow = defineWorkflow({
      name: "echo",
      description: "Answer at once",
      tools: [answer],
      terminalTool: "answer",
      systemPrompt: "Answer.",
    });
    const client = new ScriptedClient(
      Array.from(
        { length: 20 },
        () => (call: { messages: Record<string, unknown>[] }) =>
          toolCall("answer", { text: String(call.messages[1]?.content) }),
      ),
    );
    const runner = new WorkflowRunner({ client, contextManager: { maybeCompact: (messages) => messages } });
    const worker = startWorker({
      queue,
      registry: defineRegistry({ workflows: [workflow], runner }),
      concurrency: 4,
      pollMs: 20,
      onError: () => {},
    });
    cleanups.push(() => worker.close());
    const ids = ["a", "b", "c", "d"];
    for (const id of ids) await queue.enqueue("echo", id, { runId: id });
    const results = await Promise.all(ids.map((id) => queue.result(id)));
    expect(results).toEqual(ids.map((id) => `answered ${id}`));
    expect((await queue.list()).map((run) => run.status)).toEqual([
      "completed",
      "completed",
      "completed",
      "completed",
    ]);
    expect(leftovers(dir)).toEqual([]);
  }, 30_000);
});

describe("another process takes the directory over (this one frozen past the lock's staleness)", () => {
  /** Age the lock as a frozen holder leaves it (no refresh for over 10 s), and open a second queue. */
  async function takeOver(dir: string) {
    const past = new Date(Date.now() - 60_000);
    utimesSync(join(dir, "queue.lock"), past, past);
    return open(dir);
  }

  it("refuses the first holder's writes with QueueFencedError, stops its leases, and keeps its lock", async () => {
    const dir = tempDir();
    const { queue: first, warnings } = await open(dir);
    await first.enqueue("echo", "x", { runId: "r1" });
    const lease = await first.take("w");
    await lease?.saveCheckpoint(checkpointOf(1));
    const { queue: second } = await takeOver(dir);
    expect((await second.get("r1"))?.status).toBe("waiting");

    const refused = await lease?.saveCheckpoint(checkpointOf(2)).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(QueueFencedError);
    expect(refused).toMatchObject({ name: "QueueFencedError", epoch: 1, currentEpoch: 2, runId: "r1" });
    expect(lease?.signal.aborted).toBe(true);
    await expect(lease?.complete("late")).rejects.toThrow(QueueFencedError);
    await expect(first.take("w")).rejects.toThrow(QueueFencedError);
    await expect(first.enqueue("echo", "y", { runId: "r2" })).rejects.toThrow(QueueFencedError);
    expect(warnings).toEqual([expect.stringMatching(/taken over by another process.*This worker stops/)]);

    // The run is the second holder's, as it left it (its file says so); closing the first leaves
    // the second's lock.
    expect(await second.get("r1")).toMatchObject({ status: "waiting", checkpoint: { meta: { seq: 1 } } });
    expect(JSON.parse(readFileSync(join(dir, "runs", "r1.json"), "utf8"))).toMatchObject({ epoch: 2 });
    expect(await second.get("r1")).not.toHaveProperty("epoch");
    await first.close();
    expect(existsSync(join(dir, "queue.lock"))).toBe(true);
    const next = await second.take("w2");
    await next?.complete("by the second");
    expect(await second.result("r1")).toBe("by the second");
  });

  it("stops every lane of the first holder's worker at once, reporting QueueFencedError once", async () => {
    const dir = tempDir();
    const { queue: first } = await open(dir);
    const { workflow, runner } = echo();
    const errors: unknown[] = [];
    const worker = startWorker({
      queue: first,
      registry: defineRegistry({ workflows: [workflow], runner }),
      concurrency: 3,
      pollMs: 20,
      onError: (error) => errors.push(error),
    });
    cleanups.push(() => worker.close());
    await takeOver(dir);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(errors).toEqual([expect.any(QueueFencedError)]);
    const closed = Date.now();
    await worker.close();
    expect(Date.now() - closed).toBeLessThan(100); // its lanes had stopped already
  });
});
