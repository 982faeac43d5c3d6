/**
 * The `RunQueue` contract: what every engine promises, written once and run over each of them
 * (BullMQ's adapter-conformance suites are the model). Each engine's file passes a
 * {@link ContractEngine} that opens its real queue (a directory, redis-server, PostgreSQL 15);
 * the cases drive the queue through its interface only, and through `startWorker` at the end.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ApprovalState } from "../../../src/core/approval.ts";
import {
  ApprovalAlreadyDecidedError,
  ApprovalNotPendingError,
  ApprovalRunClosedError,
} from "../../../src/core/errors.ts";
import {
  defineRegistry,
  LeaseLostError,
  type RunLease,
  RunPayloadTooLargeError,
  type RunQueue,
  RunQueueClosedError,
  startWorker,
} from "../../../src/queue/index.ts";
import { echo } from "../../fixtures/durable/echo.ts";
import { checkpointOf } from "../../helpers/stored-checkpoint.ts";

/** A queue as its engines open it, with the idle wait workers use (every engine has one). */
export type ContractQueue = RunQueue & { waitForWork(signal?: AbortSignal): Promise<void> };

/** How the contract opens one engine's queues. */
export interface ContractEngine {
  /** A new, empty queue of its own, opened as a worker opens it. */
  open(): Promise<ContractQueue>;
  /** A second handle on `queue`'s runs, as a producer in another process opens it. */
  openProducer(queue: ContractQueue): Promise<ContractQueue>;
  /**
   * The process holding `queue` dies with its leases unsettled (its lock renewals stop): resolves
   * with the queue the next worker opens on the same runs.
   */
  crash(queue: ContractQueue): Promise<ContractQueue>;
  /** How long a lease's lock lives unless renewed, where leases expire; undefined where they do not. */
  lockMs?: number;
}

/** Two calls a run parks for, as the loop records them (`createApprovalRequest`). */
function approvalOf(runId: string): ApprovalState {
  return {
    pending: [
      { runId, callId: "call-transfer", tool: "transfer", args: { to: "B2", amount: 250 } },
      { runId, callId: "call-notify", tool: "notify", args: { text: "paid" } },
    ],
    decisions: [],
  };
}

/**
 * Run the contract over one engine: `describe` it as `engineName`, opening queues with `engine`.
 * @example
 * describeRunQueueContract("embedded", { open, openProducer, crash });
 */
export function describeRunQueueContract(engineName: string, engine: ContractEngine): void {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  /** Every queue a case opens is closed after it. */
  const closing = async (opened: Promise<ContractQueue>): Promise<ContractQueue> => {
    const queue = await opened;
    cleanups.push(() => queue.close());
    return queue;
  };
  const open = () => closing(engine.open());
  const openProducer = (queue: ContractQueue) => closing(engine.openProducer(queue));
  const crash = (queue: ContractQueue) => closing(engine.crash(queue));

  /** Take the next run, waiting on the queue's own wake-ups until one is handed out. */
  async function takeNext(queue: ContractQueue, workerId = "w"): Promise<RunLease> {
    for (;;) {
      const lease = await queue.take(workerId);
      if (lease) return lease;
      await queue.waitForWork();
    }
  }

  /** Enqueue `runId` on a queue where no other run waits, take it, checkpoint it (`seq`): its lease. */
  async function checkpointed(queue: ContractQueue, runId: string, seq: number): Promise<RunLease> {
    await queue.enqueue("echo", "x", { runId });
    const lease = await takeNext(queue);
    await lease.saveCheckpoint(checkpointOf(seq));
    return lease;
  }

  /** Take every waiting run in turn, completing each; the run ids in the order they came. */
  async function drain(queue: ContractQueue): Promise<string[]> {
    const order: string[] = [];
    for (let lease = await queue.take("w"); lease; lease = await queue.take("w")) {
      order.push(lease.job.runId);
      await lease.complete(null);
    }
    return order;
  }

  describe(`the RunQueue contract on the ${engineName} queue`, () => {
    describe("enqueue", () => {
      it("stores a waiting run with its job, priority 0 by default, no attempt yet", async () => {
        const queue = await open();
        const before = Date.now();
        const record = await queue.enqueue("echo", "hello", { runId: "e1", promptVars: { city: "Paris" } });
        expect(record).toEqual({
          runId: "e1",
          workflow: "echo",
          message: "hello",
          priority: 0,
          promptVars: { city: "Paris" },
          status: "waiting",
          attempts: 0,
          enqueuedAt: expect.any(Number),
        });
        expect(Math.floor(record.enqueuedAt)).toBeGreaterThanOrEqual(before);
        expect(await queue.get("e1")).toEqual(record);
      });

      it("gives a run without a run id a fresh valid one", async () => {
        const queue = await open();
        const first = await queue.enqueue("echo", "a");
        const second = await queue.enqueue("echo", "b");
        expect(first.runId).not.toBe(second.runId);
        expect(first.runId).toMatch(/^[A-Za-z0-9_.-]{1,128}$/);
        expect((await queue.list()).map((run) => run.runId)).toEqual([first.runId, second.runId]);
      });

      it("is idempotent by run id: the same id again returns the run unchanged", async () => {
        const queue = await open();
        const first = await queue.enqueue("echo", "one", { runId: "same", priority: 2 });
        const again = await queue.enqueue("other", "two", { runId: "same", priority: 9 });
        expect(again).toEqual(first);
        expect(await queue.list()).toEqual([first]);
        // Still so once the run has finished.
        await (await queue.take("w"))?.complete("done");
        expect(await queue.enqueue("echo", "three", { runId: "same" })).toMatchObject({
          status: "completed",
          message: "one",
        });
      });

      it("refuses a bad run id, priority or payload with a RangeError or RunPayloadTooLargeError, storing nothing", async () => {
        const queue = await open();
        for (const runId of ["no spaces", "42", "../x", "a:b", "", ".", "..", "x".repeat(129)]) {
          await expect(queue.enqueue("echo", "x", { runId })).rejects.toThrow(RangeError);
        }
        // The names of BullMQ's own keys beside the jobs (its failed set, its wait list, …).
        for (const runId of ["failed", "wait", "meta", "waiting-children"]) {
          await expect(queue.enqueue("echo", "x", { runId })).rejects.toThrow(/is reserved/);
        }
        for (const priority of [1.5, Number.NaN, 2 ** 20, -(2 ** 20)]) {
          await expect(queue.enqueue("echo", "x", { runId: "p", priority })).rejects.toThrow(
            /priority must be an integer/,
          );
        }
        const huge = "x".repeat(1024 * 1024);
        const refused = await queue.enqueue("echo", huge, { runId: "big" }).catch((error: unknown) => error);
        expect(refused).toBeInstanceOf(RunPayloadTooLargeError);
        expect(refused).toMatchObject({ runId: "big", limitBytes: 1024 * 1024 });
        expect(await queue.list()).toEqual([]);
        // The limits themselves are allowed.
        await queue.enqueue("echo", "x", { runId: "top", priority: 2 ** 20 - 1 });
        await queue.enqueue("echo", "x", { runId: "bottom", priority: -(2 ** 20) + 1 });
        expect(await drain(queue)).toEqual(["top", "bottom"]);
      });
    });

    describe("take", () => {
      it("hands out nothing from an empty queue", async () => {
        const queue = await open();
        expect(await queue.take("w")).toBeNull();
      });

      it("hands runs out by priority, higher first, then first in first out", async () => {
        const queue = await open();
        await queue.enqueue("echo", "x", { runId: "a" });
        await queue.enqueue("echo", "x", { runId: "b", priority: 5 });
        await queue.enqueue("echo", "x", { runId: "c" });
        await queue.enqueue("echo", "x", { runId: "d", priority: -3 });
        await queue.enqueue("echo", "x", { runId: "e", priority: 5 });
        // Enqueued back to back, many within one millisecond: still in order.
        const burst = Array.from({ length: 12 }, (_, index) => `burst-${String(index).padStart(2, "0")}`);
        for (const runId of burst) await queue.enqueue("echo", "x", { runId, priority: 1 });
        expect(await drain(queue)).toEqual(["b", "e", ...burst, "a", "c", "d"]);
      });

      it("keeps a run's place when it waits again (released, failed to retry, retried, decided): its priority, ahead of the runs enqueued after it", async () => {
        const queue = await open();
        const waitAgain: [string, (lease: RunLease) => Promise<unknown>][] = [
          ["released", (lease) => lease.release()],
          [
            "failed to retry",
            (lease) => lease.fail({ name: "BackendError", message: "503" }, { retry: true }),
          ],
          [
            "retried",
            async (lease) => {
              await lease.fail({ name: "GuardrailError", message: "gave up" });
              await queue.retry(lease.job.runId);
            },
          ],
          [
            "decided",
            async (lease) => {
              await lease.park(approvalOf(lease.job.runId));
              await queue.approve(lease.job.runId);
            },
          ],
        ];
        for (const [how, again] of waitAgain) {
          const run = how.replaceAll(" ", "-");
          await queue.enqueue("echo", how, { runId: run });
          const lease = await takeNext(queue);
          await queue.enqueue("echo", how, { runId: `${run}-high`, priority: 1 });
          await queue.enqueue("echo", how, { runId: `${run}-same` });
          await queue.enqueue("echo", how, { runId: `${run}-low`, priority: -1 });
          await again(lease);
          expect(await drain(queue)).toEqual([`${run}-high`, run, `${run}-same`, `${run}-low`]);
        }
      });

      it("leases a run to one taker: the job, no checkpoint, attempt 1; the run is active", async () => {
        const queue = await open();
        await queue.enqueue("echo", "hello", { runId: "t1", priority: 3, promptVars: { city: "Oslo" } });
        const lease = await queue.take("w");
        expect(lease?.job).toEqual({
          runId: "t1",
          workflow: "echo",
          message: "hello",
          priority: 3,
          promptVars: { city: "Oslo" },
        });
        expect(lease?.checkpoint).toBeUndefined();
        expect(lease?.approval).toBeUndefined();
        expect(lease?.attempts).toBe(1);
        expect(lease?.signal.aborted).toBe(false);
        expect(await queue.get("t1")).toMatchObject({ status: "active", attempts: 1 });
        expect(await queue.take("w2")).toBeNull();
      });

      it("carries the run's traceparent in its record, its job and its checkpoints' meta", async () => {
        const queue = await open();
        const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        await queue.enqueue("echo", "hello", { runId: "tp1", traceparent });
        expect(await queue.get("tp1")).toMatchObject({ traceparent });
        const lease = await queue.take("w");
        expect(lease?.job.traceparent).toBe(traceparent);
        const spanOfRun = "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01";
        await lease?.saveCheckpoint({
          snapshot: { value: "infer" },
          meta: {
            seq: 1,
            workflow: "echo",
            definitionHash: "h",
            machineVersion: 1,
            reason: "llm",
            runId: "tp1",
            iteration: 1,
            traceparent: spanOfRun,
          },
        });
        expect((await queue.get("tp1"))?.checkpoint?.meta.traceparent).toBe(spanOfRun);
        await expect(queue.enqueue("echo", "x", { runId: "tp2", traceparent: "00-0-0-01" })).rejects.toThrow(
          RangeError,
        );
      });
    });

    describe("a lease", () => {
      it("keeps each checkpoint and settles the run completed with its result", async () => {
        const queue = await open();
        const lease = await checkpointed(queue, "l1", 1);
        await lease.saveCheckpoint(checkpointOf(2));
        expect((await queue.get("l1"))?.checkpoint).toEqual(checkpointOf(2));
        const before = Date.now();
        await lease.complete({ answer: 42 });
        const record = await queue.get("l1");
        expect(record).toMatchObject({ status: "completed", attempts: 1, result: { answer: 42 } });
        expect(record?.checkpoint).toEqual(checkpointOf(2));
        expect(record?.error).toBeUndefined();
        expect(record?.finishedAt).toBeGreaterThanOrEqual(before);
        expect(await queue.result("l1")).toEqual({ answer: 42 });
      });

      it("settles a run completed with no value as null", async () => {
        const queue = await open();
        await queue.enqueue("echo", "x", { runId: "l2" });
        await (await takeNext(queue)).complete(undefined);
        expect(await queue.result("l2")).toBeNull();
        expect((await queue.get("l2"))?.result).toBeNull();
      });

      it("fails a run for good: its error kept, result() rejects with it", async () => {
        const queue = await open();
        await queue.enqueue("echo", "x", { runId: "l3" });
        const lease = await takeNext(queue);
        const before = Date.now();
        await lease.fail({ name: "GuardrailError", message: "gave up" });
        const record = await queue.get("l3");
        expect(record).toMatchObject({
          status: "failed",
          error: { name: "GuardrailError", message: "gave up" },
        });
        expect(record?.finishedAt).toBeGreaterThanOrEqual(before);
        const error = await queue.result("l3").catch((caught: unknown) => caught);
        expect(error).toMatchObject({ name: "GuardrailError", message: "gave up" });
      });

      it("fails a run to be retried: it waits again with its error, and resumes from its checkpoint", async () => {
        const queue = await open();
        const first = await checkpointed(queue, "l4", 3);
        await first.fail({ name: "BackendError", message: "503" }, { retry: true });
        const waiting = await queue.get("l4");
        expect(waiting).toMatchObject({ status: "waiting", attempts: 1, error: { message: "503" } });
        expect(waiting?.finishedAt).toBeUndefined();
        const second = await takeNext(queue);
        expect(second.attempts).toBe(2);
        expect(second.checkpoint).toEqual(checkpointOf(3));
        await second.complete("done");
        expect(await queue.get("l4")).toMatchObject({ status: "completed", attempts: 2 });
      });

      it("hands a run back on release: it waits, and the next taker resumes it from its checkpoint", async () => {
        const queue = await open();
        const first = await checkpointed(queue, "l5", 2);
        await first.release();
        expect(await queue.get("l5")).toMatchObject({ status: "waiting", attempts: 1 });
        const second = await takeNext(queue);
        expect(second.attempts).toBe(2);
        expect(second.checkpoint).toEqual(checkpointOf(2));
      });

      it("refuses every write once it settled, with LeaseLostError", async () => {
        const queue = await open();
        await queue.enqueue("echo", "x", { runId: "l6" });
        const lease = await takeNext(queue);
        await lease.complete("first");
        await expect(lease.saveCheckpoint(checkpointOf(9))).rejects.toBeInstanceOf(LeaseLostError);
        await expect(lease.complete("second")).rejects.toBeInstanceOf(LeaseLostError);
        await expect(lease.fail({ name: "Error", message: "late" })).rejects.toBeInstanceOf(LeaseLostError);
        expect(await queue.get("l6")).toMatchObject({ status: "completed", result: "first" });
      });

      it("stays its holder's past the lock's lifetime while it is held (renewed)", async () => {
        const queue = await open();
        await queue.enqueue("echo", "x", { runId: "l7" });
        const lease = await takeNext(queue);
        const lockMs = engine.lockMs ?? 0;
        await new Promise((resolve) => setTimeout(resolve, 3 * lockMs));
        expect(lease.signal.aborted).toBe(false);
        await lease.saveCheckpoint(checkpointOf(1));
        await lease.complete("kept");
        expect(await queue.result("l7")).toBe("kept");
      });
    });

    describe("a crashed worker", () => {
      it("leaves its run to the next worker, which resumes it from the last checkpoint", async () => {
        const queue = await open();
        const lease = await checkpointed(queue, "c1", 7);
        const survivor = await crash(queue);
        const next = await takeNext(survivor, "survivor");
        expect(next.job.runId).toBe("c1");
        expect(next.checkpoint).toEqual(checkpointOf(7));
        expect(next.attempts).toBe(2);
        // The dead worker's lease cannot write over the new holder's.
        await expect(lease.saveCheckpoint(checkpointOf(8))).rejects.toBeInstanceOf(LeaseLostError);
        await next.complete("ok");
        expect(await survivor.result("c1")).toBe("ok");
        expect((await survivor.get("c1"))?.checkpoint).toEqual(checkpointOf(7));
      });

      it("leaves its run its priority: behind higher runs, ahead of lower ones", async () => {
        const queue = await open();
        await queue.enqueue("echo", "x", { runId: "c2" });
        await takeNext(queue);
        await queue.enqueue("echo", "x", { runId: "c2-high", priority: 1 });
        await queue.enqueue("echo", "x", { runId: "c2-same" });
        await queue.enqueue("echo", "x", { runId: "c2-low", priority: -1 });
        const survivor = await crash(queue);
        while ((await survivor.get("c2"))?.status !== "waiting") await survivor.waitForWork();
        const order = await drain(survivor);
        // Its place among the runs of its priority is the engine's (RunQueue.take).
        expect([order[0], order[3]]).toEqual(["c2-high", "c2-low"]);
        expect(order.slice(1, 3).sort()).toEqual(["c2", "c2-same"]);
      });
    });

    describe("cancel", () => {
      it("cancels a waiting run: result() rejects, no taker gets it", async () => {
        const queue = await open();
        await queue.enqueue("echo", "x", { runId: "x1" });
        const before = Date.now();
        await queue.cancel("x1");
        const record = await queue.get("x1");
        expect(record).toMatchObject({ status: "cancelled", error: { name: "WorkflowCancelledError" } });
        expect(record?.finishedAt).toBeGreaterThanOrEqual(before);
        await expect(queue.result("x1")).rejects.toThrow(/cancelled/);
        expect(await queue.take("w")).toBeNull();
        expect((await queue.get("x1"))?.status).toBe("cancelled");
        expect((await queue.list({ status: "cancelled" })).map((run) => run.runId)).toEqual(["x1"]);
      });

      it("stops an active run: its lease aborts with LeaseLostError and cannot write", async () => {
        const queue = await open();
        const lease = await checkpointed(queue, "x2", 1);
        await queue.cancel("x2");
        expect(lease.signal.aborted).toBe(true);
        expect(lease.signal.reason).toBeInstanceOf(LeaseLostError);
        await expect(lease.complete("late")).rejects.toBeInstanceOf(LeaseLostError);
        const record = await queue.get("x2");
        expect(record).toMatchObject({ status: "cancelled", error: { name: "WorkflowCancelledError" } });
        expect(record?.checkpoint).toEqual(checkpointOf(1));
        expect(record?.finishedAt).toEqual(expect.any(Number));
      });

      it("reaches a lease held by another process at its next checkpoint", async () => {
        const queue = await open();
        const producer = await openProducer(queue);
        await producer.enqueue("echo", "x", { runId: "x3" });
        const lease = await takeNext(queue);
        await producer.cancel("x3");
        await expect(lease.saveCheckpoint(checkpointOf(1))).rejects.toBeInstanceOf(LeaseLostError);
        expect(lease.signal.aborted).toBe(true);
        expect((await producer.get("x3"))?.status).toBe("cancelled");
        await expect(producer.result("x3")).rejects.toThrow(/cancelled/);
      });

      it("leaves a finished run as it is, and an unknown run id alone", async () => {
        const queue = await open();
        await queue.enqueue("echo", "x", { runId: "x4" });
        await (await takeNext(queue)).complete("done");
        await queue.cancel("x4");
        expect(await queue.get("x4")).toMatchObject({ status: "completed", result: "done" });
        await queue.cancel("nosuchrun");
        expect(await queue.get("nosuchrun")).toBeUndefined();
        await expect(queue.cancel("no spaces")).rejects.toThrow(RangeError);
      });
    });

    describe("retry", () => {
      it("puts a failed run back to waiting with a fresh allowance, to resume from its checkpoint", async () => {
        const queue = await open();
        const first = await checkpointed(queue, "r1", 3);
        await first.fail({ name: "GuardrailError", message: "gave up" });
        const retried = await queue.retry("r1");
        expect(retried).toMatchObject({
          runId: "r1",
          status: "waiting",
          attempts: 0,
          error: { name: "GuardrailError" },
        });
        expect(retried.finishedAt).toBeUndefined();
        const second = await takeNext(queue);
        expect(second.attempts).toBe(1);
        expect(second.checkpoint).toEqual(checkpointOf(3));
        await second.complete("done");
        expect(await queue.result("r1")).toBe("done");
      });

      it("puts a run cancelled while active, or while waiting, back to waiting without the cancel's error", async () => {
        const queue = await open();
        await checkpointed(queue, "r2", 4);
        await queue.enqueue("echo", "x", { runId: "r3" });
        await queue.cancel("r2");
        await queue.cancel("r3");
        for (const runId of ["r2", "r3"]) {
          const retried = await queue.retry(runId);
          expect(retried).toMatchObject({ runId, status: "waiting" });
          expect(retried.error).toBeUndefined();
        }
        const again = await takeNext(queue);
        expect(again.job.runId).toBe("r2");
        expect(again.checkpoint).toEqual(checkpointOf(4));
        expect((await takeNext(queue)).job.runId).toBe("r3");
      });

      it("refuses a run that is waiting, active or completed, and an unknown one, with a RangeError", async () => {
        const queue = await open();
        await queue.enqueue("echo", "x", { runId: "r4" });
        await expect(queue.retry("r4")).rejects.toThrow(/waiting: only a failed or cancelled run/);
        const lease = await takeNext(queue);
        await expect(queue.retry("r4")).rejects.toThrow(/active: only a failed or cancelled run/);
        await lease.complete("done");
        await expect(queue.retry("r4")).rejects.toThrow(/completed: only a failed or cancelled run/);
        await expect(queue.retry("nosuchrun")).rejects.toThrow(RangeError);
        await expect(queue.retry("no spaces")).rejects.toThrow(RangeError);
      });
    });

    describe("approval", () => {
      /** A run parked for the two calls of `approvalOf`, its snapshot checkpointed. */
      async function parked(queue: ContractQueue, runId: string): Promise<void> {
        await queue.enqueue("payments", "Pay B2 250", { runId });
        const lease = await takeNext(queue);
        await lease.saveCheckpoint(checkpointOf(5));
        await lease.park(approvalOf(runId));
      }

      it("parks a run: awaiting_approval, holding no lease, its approval and checkpoint kept", async () => {
        const queue = await open();
        await parked(queue, "a1");
        const record = await queue.get("a1");
        expect(record).toMatchObject({ status: "awaiting_approval", approval: approvalOf("a1") });
        expect(record?.checkpoint).toEqual(checkpointOf(5));
        expect(record?.finishedAt).toBeUndefined();
        expect(await queue.take("w")).toBeNull();
        expect((await queue.list({ status: "awaiting_approval" })).map((run) => run.runId)).toEqual(["a1"]);
      });

      it("waits until every call is decided, then resumes on a taker with the decisions", async () => {
        const queue = await open();
        await parked(queue, "a2");
        const half = await queue.approve("a2", { callId: "call-transfer" });
        expect(half.status).toBe("awaiting_approval");
        expect(await queue.take("w")).toBeNull();
        const decided = await queue.deny("a2", { callId: "call-notify", reason: "no mail today" });
        expect(decided.status).toBe("waiting");
        const decisions = [
          { callId: "call-transfer", approved: true },
          { callId: "call-notify", approved: false, reason: "no mail today" },
        ];
        expect(decided.approval?.decisions).toEqual(decisions);
        const lease = await takeNext(queue);
        expect(lease.job.runId).toBe("a2");
        expect(lease.checkpoint).toEqual(checkpointOf(5));
        expect(lease.approval?.decisions).toEqual(decisions);
        await lease.complete("paid");
        expect(await queue.get("a2")).toMatchObject({ status: "completed", approval: { decisions } });
      });

      it("decides every undecided call when none is named", async () => {
        const queue = await open();
        await parked(queue, "a3");
        const denied = await queue.deny("a3", { reason: "not today" });
        expect(denied.status).toBe("waiting");
        expect(denied.approval?.decisions.map((decision) => [decision.callId, decision.approved])).toEqual([
          ["call-transfer", false],
          ["call-notify", false],
        ]);
      });

      it("refuses a decision with the typed error: no such call, decided before, a run not parked or closed, an unknown run", async () => {
        const queue = await open();
        await parked(queue, "a4");
        await expect(queue.approve("a4", { callId: "nosuchcall" })).rejects.toBeInstanceOf(
          ApprovalNotPendingError,
        );
        await queue.approve("a4", { callId: "call-transfer" });
        await expect(queue.deny("a4", { callId: "call-transfer" })).rejects.toBeInstanceOf(
          ApprovalAlreadyDecidedError,
        );
        await queue.enqueue("echo", "x", { runId: "a5" });
        await expect(queue.approve("a5")).rejects.toBeInstanceOf(ApprovalNotPendingError);
        await queue.cancel("a4");
        expect((await queue.get("a4"))?.status).toBe("cancelled");
        await expect(queue.approve("a4")).rejects.toBeInstanceOf(ApprovalRunClosedError);
        await expect(queue.approve("nosuchrun")).rejects.toThrow(RangeError);
        await expect(queue.deny("no spaces")).rejects.toThrow(RangeError);
      });
    });

    describe("reading runs", () => {
      it("lists every run oldest first, filtered by status; get of an unknown run is undefined", async () => {
        const queue = await open();
        await queue.enqueue("echo", "x", { runId: "g1", priority: -1 });
        await queue.enqueue("echo", "x", { runId: "g2", priority: 4 });
        await queue.enqueue("echo", "x", { runId: "g3" });
        const lease = await takeNext(queue);
        expect(lease.job.runId).toBe("g2");
        await queue.cancel("g3");
        expect((await queue.list()).map((run) => [run.runId, run.status])).toEqual([
          ["g1", "waiting"],
          ["g2", "active"],
          ["g3", "cancelled"],
        ]);
        expect((await queue.list({ status: "active" })).map((run) => run.runId)).toEqual(["g2"]);
        expect(await queue.list({ status: "failed" })).toEqual([]);
        expect(await queue.get("nosuchrun")).toBeUndefined();
        await expect(queue.get("no spaces")).rejects.toThrow(RangeError);
      });

      it("resolves result() when another process completes the run; rejects for an unknown run or an aborted wait", async () => {
        const queue = await open();
        const producer = await openProducer(queue);
        await producer.enqueue("echo", "x", { runId: "g4" });
        const result = producer.result("g4");
        const lease = await takeNext(queue);
        await lease.complete("from the worker");
        expect(await result).toBe("from the worker");
        await expect(producer.result("nosuchrun")).rejects.toThrow(RangeError);
        await producer.enqueue("echo", "x", { runId: "g5" });
        const controller = new AbortController();
        const waiting = producer.result("g5", { signal: controller.signal });
        controller.abort(new Error("gave up waiting"));
        await expect(waiting).rejects.toThrow("gave up waiting");
      });
    });

    describe("prune", () => {
      it("removes finished runs of the statuses asked for, never a waiting, active or parked one; a pruned id enqueues anew", async () => {
        const queue = await open();
        for (const runId of ["done", "broken", "stopped", "held", "parked", "queued"]) {
          await queue.enqueue("echo", runId, { runId });
        }
        await (await takeNext(queue)).complete("ok");
        await (await takeNext(queue)).fail({ name: "GuardrailError", message: "gave up" });
        await queue.cancel("stopped");
        expect((await takeNext(queue)).job.runId).toBe("held");
        await (await takeNext(queue)).park(approvalOf("parked"));
        // Runs that finished a moment ago are not older than an hour.
        expect(await queue.prune({ olderThanMs: 3_600_000 })).toBe(0);
        expect(await queue.prune({ olderThanMs: 0, status: ["failed"] })).toBe(1);
        expect(await queue.prune({ olderThanMs: 0 })).toBe(2);
        expect((await queue.list()).map((run) => [run.runId, run.status])).toEqual([
          ["held", "active"],
          ["parked", "awaiting_approval"],
          ["queued", "waiting"],
        ]);
        expect(await queue.get("done")).toBeUndefined();
        expect(await queue.enqueue("echo", "again", { runId: "done" })).toMatchObject({
          status: "waiting",
          message: "again",
        });
        for (const options of [{ olderThanMs: -1 }, { olderThanMs: 1.5 }, { olderThanMs: 0, status: [] }]) {
          await expect(queue.prune(options)).rejects.toThrow(RangeError);
        }
        await expect(queue.prune({ olderThanMs: 0, status: ["waiting" as "completed"] })).rejects.toThrow(
          /not a finished status/,
        );
      });
    });

    describe("close", () => {
      it("aborts the leases it holds and refuses new work; closing twice is fine", async () => {
        const queue = await open();
        await queue.enqueue("echo", "x", { runId: "q1" });
        await queue.enqueue("echo", "x", { runId: "q2" });
        const lease = await takeNext(queue);
        const pending = queue.result("q2").catch((error: unknown) => error);
        await queue.close();
        await queue.close();
        expect(lease.signal.aborted).toBe(true);
        await expect(lease.saveCheckpoint(checkpointOf(1))).rejects.toBeInstanceOf(LeaseLostError);
        expect(await pending).toBeInstanceOf(Error);
        await expect(queue.enqueue("echo", "x", { runId: "q3" })).rejects.toBeInstanceOf(RunQueueClosedError);
        await expect(queue.take("w")).rejects.toBeInstanceOf(RunQueueClosedError);
      });
    });

    describe("a worker", () => {
      it("runs enqueued workflows and hands back results; a run naming an unknown workflow fails with the reason", async () => {
        const queue = await open();
        const { workflow, runner, seen } = echo();
        const worker = startWorker({
          queue,
          registry: defineRegistry({ workflows: [workflow], runner }),
          concurrency: 2,
        });
        cleanups.push(() => worker.close());
        for (const text of ["x", "y", "z"]) await queue.enqueue("echo", text, { runId: `run-${text}` });
        await queue.enqueue("nope", "?", { runId: "bad" });
        expect(await queue.result("run-y")).toBe("answered y");
        expect(await queue.result("run-z")).toBe("answered z");
        expect(await queue.result("run-x")).toBe("answered x");
        expect(seen.sort()).toEqual(["x", "y", "z"]);
        const record = await queue.get("run-x");
        expect(record).toMatchObject({ status: "completed", attempts: 1, result: "answered x" });
        expect(record?.checkpoint?.meta.runId).toBe("run-x");
        await expect(queue.result("bad")).rejects.toThrow(/No workflow 'nope'/);
        expect((await queue.get("bad"))?.error?.name).toBe("WorkflowDefinitionError");
      });
    });
  });
}
