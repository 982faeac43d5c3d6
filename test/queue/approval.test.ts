/**
 * Runs that wait for approval on every queue engine (embedded, Redis, PostgreSQL, real servers):
 * a worker process parks the run (its own status, no lane held) and is killed with SIGKILL while
 * the run waits; the decisions taken through the queue put it back to waiting, another worker
 * resumes it from the parked snapshot, the approved unsafe call runs exactly once (effects counted
 * by idempotency key) and the denied one never; deciding twice, a call not pending, and a
 * cancelled run are typed errors.
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  ApprovalAlreadyDecidedError,
  ApprovalNotPendingError,
  ApprovalRunClosedError,
} from "../../src/core/errors.ts";
import { createRunQueue, type RunQueue, type RunQueueSpec } from "../../src/queue/index.ts";
import { startPaymentsWorker } from "../fixtures/approval/approval-queue.ts";
import { effectCounts, readEffects } from "../fixtures/approval/payments.ts";
import { crashHarness, waitForLine } from "../helpers/crash-harness.ts";
import { useQueueServers } from "../helpers/queue-servers.ts";

const { redis, postgres } = useQueueServers();

const { cleanups, tempDir, spawnFixture } = crashHarness("forge-approval-queue-");
const CHILD = new URL("../fixtures/approval/approval-worker-child.ts", import.meta.url);

interface Engine {
  name: string;
  /** What the child opens: a URL, or the embedded queue's directory. */
  spec: (dir: string) => string;
  /** What this process opens on the same queue, once the child is dead. */
  open: (spec: string, queueName: string) => RunQueue | Promise<RunQueue>;
}

const bullmq = (queueName: string) => ({ name: queueName, lockMs: 2_000, stalledIntervalMs: 1_000 });
const engines: Engine[] = [
  {
    name: "embedded",
    spec: (dir) => join(dir, "queue"),
    // The killed child's lock goes stale after 10 s: this process waits for it.
    open: (spec) => createRunQueue({ embedded: spec, waitForLockMs: 20_000 } as RunQueueSpec),
  },
  {
    name: "Redis",
    spec: () => redis().url,
    open: (spec, queueName) => createRunQueue({ redis: spec, ...bullmq(queueName) }),
  },
  {
    name: "PostgreSQL",
    spec: () => postgres().url,
    open: (spec, queueName) => createRunQueue({ postgres: spec, ...bullmq(queueName) }),
  },
];

/** Resolves once `done()` is true (checked every 20 ms); the test's own timeout bounds it. */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 20));
}

async function opened(engine: Engine, spec: string, queueName: string): Promise<RunQueue> {
  const queue = await engine.open(spec, queueName);
  cleanups.push(() => queue.close());
  return queue;
}

describe.each(engines)("approval on the $name queue", (engine) => {
  it("parks the run, survives its worker's SIGKILL, and resumes on another worker once decided", async () => {
    const dir = tempDir();
    const queueName = `approval-${randomUUID()}`;
    const spec = engine.spec(dir);
    const child = spawnFixture(CHILD, [spec, queueName, dir, "pay-1"]);
    const exited = new Promise((resolve) => child.on("exit", (_code, signal) => resolve(signal)));
    await waitForLine(dir, (line) => line === "settled pay-1 awaiting_approval", "the run to park", 60_000);
    // Killed while the run waits: it holds no lease, so nothing is lost.
    child.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");
    expect(readEffects(dir)).toEqual(["settled pay-1 awaiting_approval"]);

    const queue = await opened(engine, spec, queueName);
    const parked = await queue.get("pay-1");
    expect(parked?.status).toBe("awaiting_approval");
    expect(parked?.checkpoint?.meta.reason).toBe("awaiting_approval");
    expect(parked?.approval?.pending.map((call) => [call.tool, call.args])).toEqual([
      ["transfer", { to: "B2", amount: 250 }],
      ["notify", { text: "paid" }],
    ]);
    expect((await queue.list({ status: "awaiting_approval" })).map((run) => run.runId)).toEqual(["pay-1"]);
    const [transfer, notify] = (parked?.approval?.pending ?? []).map((call) => call.callId) as [
      string,
      string,
    ];

    await expect(queue.approve("pay-1", { callId: "nosuchcall" })).rejects.toThrow(ApprovalNotPendingError);
    // One decision of two: the run still waits.
    expect((await queue.approve("pay-1", { callId: transfer })).status).toBe("awaiting_approval");
    await expect(queue.deny("pay-1", { callId: transfer })).rejects.toThrow(ApprovalAlreadyDecidedError);
    const decided = await queue.deny("pay-1", { callId: notify, reason: "no mail today" });
    expect(decided.status).toBe("waiting");
    expect(decided.approval?.decisions).toEqual([
      { callId: transfer, approved: true },
      { callId: notify, approved: false, reason: "no mail today" },
    ]);

    const survivor = startPaymentsWorker(queue, dir, { workerId: "survivor" });
    cleanups.push(() => survivor.close());
    expect(await queue.result("pay-1")).toBe("paid");
    expect(effectCounts(dir, "transfer")).toEqual({ [`pay-1:${transfer}`]: 1 });
    expect(effectCounts(dir, "notify")).toEqual({});
    expect(Object.values(effectCounts(dir, "lookup"))).toEqual([1]);
    expect((await queue.get("pay-1"))?.status).toBe("completed");
    await expect(queue.approve("pay-1", { callId: transfer })).rejects.toThrow(ApprovalRunClosedError);
  }, 120_000);

  it("frees the worker's lane while a run waits, and refuses decisions once the run is cancelled", async () => {
    const dir = tempDir();
    const queueName = `approval-${randomUUID()}`;
    const spec = engine.spec(dir);
    const queue = await opened(engine, spec, queueName);
    const settled: string[] = [];
    const worker = startPaymentsWorker(queue, dir, {
      workerId: "one-lane",
      concurrency: 1,
      onSettled: (runId, outcome) => settled.push(`${runId} ${outcome}`),
    });
    cleanups.push(() => worker.close());
    await queue.enqueue("payments", "Pay B2 250", { runId: "first" });
    await queue.enqueue("payments", "Pay C3 250", { runId: "second" });
    // One lane: the second run parks too, so the first one held no lane while it waited.
    await until(() => settled.length >= 2);
    expect(settled).toEqual(["first awaiting_approval", "second awaiting_approval"]);
    await queue.cancel("first");
    expect((await queue.get("first"))?.status).toBe("cancelled");
    await expect(queue.approve("first")).rejects.toThrow(ApprovalRunClosedError);
    // Approving every pending call of a run at once (no call named): it goes on (this process's
    // worker may have taken it already).
    const approved = await queue.approve("second");
    expect(approved.status).not.toBe("awaiting_approval");
    expect(approved.approval?.decisions.map((decision) => decision.approved)).toEqual([true, true]);
    expect(await queue.result("second")).toBe("paid");
    expect(Object.keys(effectCounts(dir, "transfer"))).toHaveLength(1);
    expect(Object.keys(effectCounts(dir, "notify"))).toHaveLength(1);
  }, 120_000);
});

describe.each(engines.filter((engine) => engine.name !== "embedded"))(
  "an approved unsafe call on the $name queue whose worker is killed inside it",
  (engine) => {
    it("is not run again by the worker that takes the run over: its outcome is unknown", async () => {
      const dir = tempDir();
      const queueName = `approval-${randomUUID()}`;
      const spec = engine.spec(dir);
      const parker = spawnFixture(CHILD, [spec, queueName, dir, "pay-2"]);
      await waitForLine(dir, (line) => line === "settled pay-2 awaiting_approval", "the run to park", 60_000);
      parker.kill("SIGKILL");
      const queue = await opened(engine, spec, queueName);
      expect((await queue.approve("pay-2")).status).toBe("waiting");
      // Right after the approval a worker takes the run and dies inside the approved transfer.
      const doomed = spawnFixture(CHILD, [spec, queueName, dir, "pay-2", "transfer"]);
      const exited = new Promise((resolve) => doomed.on("exit", (_code, signal) => resolve(signal)));
      await waitForLine(dir, (line) => line.startsWith("transfer "), "the approved transfer", 60_000);
      doomed.kill("SIGKILL");
      expect(await exited).toBe("SIGKILL");
      const survivor = startPaymentsWorker(queue, dir, { workerId: "survivor" });
      cleanups.push(() => survivor.close());
      expect(await queue.result("pay-2")).toBe("paid");
      const [key, count] = Object.entries(effectCounts(dir, "transfer"))[0] ?? [];
      expect([key?.startsWith("pay-2:"), count]).toEqual([true, 1]);
      // The model was told so: the history the survivor checkpointed answers the transfer that way.
      const snapshot = (await queue.get("pay-2"))?.checkpoint?.snapshot as
        | { context: { messages: { toolName?: string; content: string }[] } }
        | undefined;
      const history = snapshot?.context.messages ?? [];
      expect(history.find((message) => message.toolName === "transfer")?.content).toMatch(
        /^\[ToolError\] OutcomeUnknown: 'transfer' was interrupted by a restart/,
      );
      // The approved notify ran (after the takeover, or before the kill: once either way).
      expect(Object.values(effectCounts(dir, "notify"))).toEqual([1]);
    }, 120_000);
  },
);
