import { describe, expect, it } from "vitest";
import { createActor, fromPromise, waitFor } from "xstate";
import { RankConflictError, ToolCallError, WorkflowCancelledError } from "../../src/core/errors.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { SlotWorker, SlotWorkerError } from "../../src/loop/slot-worker.ts";
import {
  enqueueJob,
  preempts,
  type SlotJob,
  slotWorkerMachine,
} from "../../src/machines/slot-worker.machine.ts";
import {
  hangUntilAborted,
  type RecordedCall,
  ScriptedClient,
  type ScriptStep,
  text,
  toolCall,
} from "../../src/testing/index.ts";
import { respondTool } from "../../src/tools/respond.ts";
import { createPassthrough, rejectionOf } from "../helpers/workflows.ts";

const echoWorkflow = defineWorkflow({
  name: "echo",
  description: "Repeat the request back",
  tools: [respondTool()],
  terminalTool: "respond",
  systemPrompt: "Repeat the user's request with the respond tool.",
});

/** The user input a call was made for: which job the slot was serving. */
function requestOf(call: RecordedCall): string {
  return String(call.messages.find((message) => message.role === "user")?.content);
}

/** A step answering with `respond(<the request>)`. */
const echo: ScriptStep = (call) => toolCall("respond", { message: requestOf(call) });

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((resolvePromise) => {
    resolve = resolvePromise;
  });
  return { promise, resolve };
}

/** A step that signals it started, then echoes once `gate` opens: holds the slot while others queue. */
function gated(started: () => void, gate: Promise<void>): ScriptStep {
  return async (call) => {
    started();
    await gate;
    return toolCall("respond", { message: requestOf(call) });
  };
}

function setup(script: ScriptStep[]) {
  const client = new ScriptedClient(script);
  const runner = new WorkflowRunner({ client, contextManager: createPassthrough() });
  const worker = new SlotWorker(runner);
  /** The order the slot served requests in. */
  const served = () => client.calls.map(requestOf);
  return { client, runner, worker, served };
}

describe("queue order (pure)", () => {
  const job = (id: string, rank: number, seq: number): SlotJob => ({ id, rank, seq });

  it("keeps lower ranks first and arrival order within a rank", () => {
    const queue = [job("a", 2, 0), job("b", 1, 1), job("c", 1, 2), job("d", 0, 3)].reduce<SlotJob[]>(
      enqueueJob,
      [],
    );
    expect(queue.map((queued) => queued.id)).toEqual(["d", "b", "c", "a"]);
  });

  it("does not mutate the queue it is given", () => {
    const queue = [job("a", 1, 0)];
    enqueueJob(queue, job("b", 0, 1));
    expect(queue).toEqual([job("a", 1, 0)]);
  });

  it("preempts only a running job of a strictly higher rank", () => {
    expect(preempts(0, job("a", 1, 0))).toBe(true);
    expect(preempts(1, job("a", 1, 0))).toBe(false);
    expect(preempts(2, job("a", 1, 0))).toBe(false);
    expect(preempts(0, null)).toBe(false);
  });
});

describe("slotWorkerMachine", () => {
  it("keeps a JSON context and aborts the preempted job's actor signal", async () => {
    const signals = new Map<string, AbortSignal>();
    const releases = new Map<string, () => void>();
    const machine = slotWorkerMachine.provide({
      actors: {
        runJob: fromPromise<unknown, { id: string }>(({ input, signal }) => {
          signals.set(input.id, signal);
          return new Promise<void>((resolve) => releases.set(input.id, resolve));
        }),
      },
    });
    const actor = createActor(machine).start();
    actor.send({ type: "job.submit", id: "low", rank: 5 });
    actor.send({ type: "job.submit", id: "later", rank: 5 });
    expect(actor.getSnapshot().context).toEqual({
      current: { id: "low", rank: 5, seq: 0 },
      queue: [{ id: "later", rank: 5, seq: 1 }],
      submitted: 2,
    });
    actor.send({ type: "job.submit", id: "urgent", rank: 0 });
    expect(signals.get("low")?.aborted).toBe(true);
    expect(actor.getSnapshot().context.current?.id).toBe("urgent");
    const persisted = actor.getPersistedSnapshot();
    expect(JSON.parse(JSON.stringify(persisted))).toEqual(persisted);

    releases.get("urgent")?.();
    await waitFor(actor, (snapshot) => snapshot.context.current?.id === "later");
    expect(actor.getSnapshot().value).toBe("running");
    releases.get("later")?.();
    await waitFor(actor, (snapshot) => snapshot.matches("idle"));
    actor.send({ type: "worker.stop" });
    expect(actor.getSnapshot().status).toBe("done");
  });
});

describe("SlotWorker", () => {
  it("serves jobs of one rank in submission order, one at a time", async () => {
    const gate = deferred();
    const started = deferred();
    const { worker, served, client } = setup([gated(started.resolve, gate.promise), echo, echo]);
    worker.start();
    const first = worker.submit(echoWorkflow, "first");
    await started.promise;
    const second = worker.submit(echoWorkflow, "second");
    const third = worker.submit(echoWorkflow, "third");
    // The slot is busy: nothing else reached the client.
    expect(client.calls).toHaveLength(1);
    expect(worker.getSnapshot()?.context.queue.map((job) => job.rank)).toEqual([0, 0]);
    gate.resolve();
    await expect(Promise.all([first, second, third])).resolves.toEqual(["first", "second", "third"]);
    expect(served()).toEqual(["first", "second", "third"]);
    client.assertDone();
    await worker.stop();
  });

  it("serves lower ranks first, FIFO within a rank", async () => {
    const gate = deferred();
    const started = deferred();
    const { worker, served } = setup([gated(started.resolve, gate.promise), echo, echo, echo, echo]);
    worker.start();
    const running = worker.submit(echoWorkflow, "running", { rank: 0 });
    await started.promise;
    const results = [
      worker.submit(echoWorkflow, "routine", { rank: 2 }),
      worker.submit(echoWorkflow, "escalated-1", { rank: 1 }),
      worker.submit(echoWorkflow, "user", { rank: 0 }),
      worker.submit(echoWorkflow, "escalated-2", { rank: 1 }),
    ];
    gate.resolve();
    await Promise.all([running, ...results]);
    expect(served()).toEqual(["running", "user", "escalated-1", "escalated-2", "routine"]);
    await worker.stop();
  });

  it("preempts a running job of a higher rank: it rejects and its request is aborted", async () => {
    const started = deferred();
    const { worker, served, client } = setup([hangUntilAborted(started.resolve), echo, echo]);
    worker.start();
    const routine = worker.submit(echoWorkflow, "routine", { rank: 2 });
    const queued = worker.submit(echoWorkflow, "queued", { rank: 2 });
    await started.promise;
    const urgent = worker.submit(echoWorkflow, "urgent", { rank: 0 });
    const error = await rejectionOf(routine);
    expect(error).toBeInstanceOf(WorkflowCancelledError);
    expect(error.iteration).toBe(1);
    expect(client.calls[0]?.signal?.aborted).toBe(true);
    await expect(urgent).resolves.toBe("urgent");
    await expect(queued).resolves.toBe("queued");
    // The preempted job is not retried.
    expect(served()).toEqual(["routine", "urgent", "queued"]);
    await worker.stop();
  });

  it("does not preempt for an equal rank", async () => {
    const gate = deferred();
    const started = deferred();
    const { worker, served } = setup([gated(started.resolve, gate.promise), echo]);
    worker.start();
    const running = worker.submit(echoWorkflow, "running", { rank: 1 });
    await started.promise;
    const same = worker.submit(echoWorkflow, "same", { rank: 1 });
    gate.resolve();
    await expect(running).resolves.toBe("running");
    await expect(same).resolves.toBe("same");
    expect(served()).toEqual(["running", "same"]);
    await worker.stop();
  });

  it("cancelCurrent cancels the running job and moves on to the next", async () => {
    const started = deferred();
    const { worker, served } = setup([hangUntilAborted(started.resolve), echo]);
    worker.start();
    expect(worker.cancelCurrent()).toBe(false);
    const current = worker.submit(echoWorkflow, "current");
    const next = worker.submit(echoWorkflow, "next");
    await started.promise;
    expect(worker.cancelCurrent()).toBe(true);
    expect(await rejectionOf(current)).toBeInstanceOf(WorkflowCancelledError);
    await expect(next).resolves.toBe("next");
    expect(served()).toEqual(["current", "next"]);
    await worker.stop();
  });

  it("rejects a failing job with its typed error and runs the next one", async () => {
    const client = new ScriptedClient([text("prose"), text("prose"), echo]);
    const runner = new WorkflowRunner({ client, contextManager: createPassthrough(), maxRetriesPerStep: 1 });
    const worker = new SlotWorker(runner).start();
    const failing = worker.submit(echoWorkflow, "failing");
    const next = worker.submit(echoWorkflow, "next");
    expect(await rejectionOf(failing)).toBeInstanceOf(ToolCallError);
    await expect(next).resolves.toBe("next");
    client.assertDone();
    await worker.stop();
  });

  describe("stop", () => {
    it("cancels the running job, rejects queued ones at iteration 0, and resolves after the run settled", async () => {
      const started = deferred();
      const { worker, served } = setup([hangUntilAborted(started.resolve)]);
      worker.start();
      const settled: string[] = [];
      const track = (label: string, promise: Promise<unknown>) =>
        rejectionOf(promise).then((error) => {
          settled.push(label);
          return error;
        });
      const running = track("running", worker.submit(echoWorkflow, "running"));
      const queuedA = track("queued-a", worker.submit(echoWorkflow, "queued-a", { rank: 1 }));
      const queuedB = track("queued-b", worker.submit(echoWorkflow, "queued-b", { rank: 3 }));
      await started.promise;
      await worker.stop().then(() => settled.push("stop"));
      expect(settled.indexOf("running")).toBeLessThan(settled.indexOf("stop"));
      const runningError = await running;
      expect(runningError).toBeInstanceOf(WorkflowCancelledError);
      expect(runningError.iteration).toBe(1);
      for (const error of [await queuedA, await queuedB]) {
        expect(error).toBeInstanceOf(WorkflowCancelledError);
        expect(error.iteration).toBe(0);
        expect(error.messages).toEqual([]);
      }
      expect(served()).toEqual(["running"]);
      expect(worker.getSnapshot()).toBeNull();
    });

    it("rejects submissions after stop and before start with SlotWorkerError", async () => {
      const { worker, client } = setup([]);
      const early = await rejectionOf(worker.submit(echoWorkflow, "too early"));
      expect(early).toBeInstanceOf(SlotWorkerError);
      expect(early.name).toBe("SlotWorkerError");
      expect(early.message).toMatch(/not started/);
      worker.start();
      await worker.stop();
      const late = await rejectionOf(worker.submit(echoWorkflow, "too late"));
      expect(late).toBeInstanceOf(SlotWorkerError);
      expect(late.message).toMatch(/stopped/);
      expect(() => worker.start()).toThrow(SlotWorkerError);
      expect(client.calls).toHaveLength(0);
    });

    it("resolves at once when nothing is running", async () => {
      const { worker } = setup([]);
      await expect(worker.stop()).resolves.toBeUndefined();
      const started = new SlotWorker(worker.runner).start();
      await expect(started.stop()).resolves.toBeUndefined();
    });
  });

  describe("a caller's own signal", () => {
    it("removes a queued job, which rejects without reaching the client", async () => {
      const gate = deferred();
      const started = deferred();
      const { worker, served } = setup([gated(started.resolve, gate.promise), echo]);
      worker.start();
      const running = worker.submit(echoWorkflow, "running");
      const controller = new AbortController();
      const aborted = worker.submit(echoWorkflow, "aborted", { signal: controller.signal });
      const after = worker.submit(echoWorkflow, "after");
      await started.promise;
      controller.abort();
      const error = await rejectionOf(aborted);
      expect(error).toBeInstanceOf(WorkflowCancelledError);
      expect(error.iteration).toBe(0);
      expect(worker.getSnapshot()?.context.queue.map((job) => job.id)).toEqual(["job-3"]);
      gate.resolve();
      await expect(running).resolves.toBe("running");
      await expect(after).resolves.toBe("after");
      expect(served()).toEqual(["running", "after"]);
      await worker.stop();
    });

    it("cancels its running job and aborts the request in flight", async () => {
      const controller = new AbortController();
      const started = deferred();
      const { worker, client, served } = setup([hangUntilAborted(started.resolve), echo]);
      worker.start();
      const running = worker.submit(echoWorkflow, "running", { signal: controller.signal });
      const next = worker.submit(echoWorkflow, "next");
      await started.promise;
      controller.abort();
      const error = await rejectionOf(running);
      expect(error).toBeInstanceOf(WorkflowCancelledError);
      expect(client.calls[0]?.signal?.aborted).toBe(true);
      await expect(next).resolves.toBe("next");
      expect(served()).toEqual(["running", "next"]);
      await worker.stop();
    });

    it("rejects at once when already aborted", async () => {
      const { worker, client } = setup([]);
      worker.start();
      const error = await rejectionOf(
        worker.submit(echoWorkflow, "x", { signal: AbortSignal.abort(), rank: 0 }),
      );
      expect(error).toBeInstanceOf(WorkflowCancelledError);
      expect(client.calls).toHaveLength(0);
      expect(worker.getSnapshot()?.value).toBe("idle");
      await worker.stop();
    });
  });

  it("rejects a rank that is not a finite number", async () => {
    const { worker } = setup([]);
    worker.start();
    await expect(worker.submit(echoWorkflow, "x", { rank: Number.NaN })).rejects.toThrow(RangeError);
    await expect(worker.submit(echoWorkflow, "x", { rank: Number.POSITIVE_INFINITY })).rejects.toThrow(
      /rank .*must be a finite number, got Infinity/,
    );
    await worker.stop();
  });

  describe("the deprecated alias priority", () => {
    it("orders and preempts jobs as rank does when given alone", async () => {
      const hung = deferred();
      const gate = deferred();
      const started = deferred();
      const { worker, served } = setup([
        hangUntilAborted(hung.resolve),
        gated(started.resolve, gate.promise),
        echo,
        echo,
      ]);
      worker.start();
      const routine = worker.submit(echoWorkflow, "routine", { priority: 2 });
      await hung.promise;
      const urgent = worker.submit(echoWorkflow, "urgent", { priority: 0 });
      expect(await rejectionOf(routine)).toBeInstanceOf(WorkflowCancelledError);
      await started.promise;
      const later = worker.submit(echoWorkflow, "later", { priority: 1 });
      const user = worker.submit(echoWorkflow, "user", { priority: 0 });
      expect(worker.getSnapshot()?.context.queue.map((job) => job.rank)).toEqual([0, 1]);
      gate.resolve();
      await Promise.all([urgent, later, user]);
      expect(served()).toEqual(["routine", "urgent", "user", "later"]);
      await worker.stop();
    });

    it("rejects rank and priority that differ with RankConflictError, before queuing", async () => {
      const { worker, client } = setup([]);
      worker.start();
      const error = await rejectionOf(worker.submit(echoWorkflow, "x", { rank: 1, priority: 2 }));
      expect(error).toBeInstanceOf(RankConflictError);
      expect(error.message).toBe(
        "SlotWorker.submit: rank 1 and priority 2 disagree. Keep rank (lower is served first) and drop priority, its deprecated alias.",
      );
      expect(client.calls).toHaveLength(0);
      expect(worker.getSnapshot()?.value).toBe("idle");
      await worker.stop();
    });

    it("accepts rank and priority that agree", async () => {
      const { worker } = setup([echo]);
      worker.start();
      await expect(worker.submit(echoWorkflow, "same", { rank: 3, priority: 3 })).resolves.toBe("same");
      await worker.stop();
    });

    it("rejects a priority that is not a finite number, as before", async () => {
      const { worker } = setup([]);
      worker.start();
      await expect(worker.submit(echoWorkflow, "x", { priority: Number.NaN })).rejects.toThrow(RangeError);
      await worker.stop();
    });
  });
});
