/**
 * Checkpoints and resumed runs: the loop hands out its persisted snapshot before each LLM call,
 * before each tool batch, around each call; a run resumed from the last one re-runs only calls
 * without a result, gives tools their call ids, and never re-runs an interrupted `unsafe` call.
 * A "crash" here abandons the run at a checkpoint; test/durable/kill.test.ts does it with kill -9.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { CheckpointMismatchError, OutcomeUnknownError } from "../../src/core/errors.ts";
import { type Message, MessageType } from "../../src/core/messages.ts";
import { defineTool, type ToolCallContext, type ToolEffects } from "../../src/core/tools.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { type CheckpointMeta, MACHINE_VERSION } from "../../src/loop/checkpoint.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import { createPassthrough } from "../helpers/workflows.ts";

interface Saved {
  snapshot: unknown;
  meta: CheckpointMeta;
}

/** charge_card (effects as given) and send_receipt in one batch, then finish. */
function shop(effects: ToolEffects | undefined, hang: { tool?: string } = {}) {
  const calls: { tool: string; context: ToolCallContext }[] = [];
  const make = (name: string) =>
    defineTool({
      name,
      description: name,
      parameters: z.object({ order: z.string() }),
      ...(effects !== undefined && name === "charge_card" && { effects }),
      execute: ({ order }, context) => {
        calls.push({ tool: name, context });
        if (hang.tool === name) {
          hang.tool = undefined; // only the first process hangs
          return new Promise(() => {});
        }
        return `${name} done for ${order}`;
      },
    });
  const finish = defineTool({
    name: "finish",
    description: "Done",
    parameters: z.object({}),
    execute: () => "ok",
  });
  const workflow = defineWorkflow({
    name: "shop",
    description: "Charge, send a receipt, finish",
    tools: [make("charge_card"), make("send_receipt"), finish],
    requiredSteps: ["charge_card", "send_receipt"],
    terminalTool: "finish",
    systemPrompt: "Shop.",
  });
  const script = () => [
    [
      { tool: "charge_card", args: { order: "A1" } },
      { tool: "send_receipt", args: { order: "A1" } },
    ],
    toolCall("finish"),
  ];
  return { workflow, calls, script };
}

function runnerWith(script: ConstructorParameters<typeof ScriptedClient>[0], messages?: Message[]) {
  return new WorkflowRunner({
    client: new ScriptedClient(script),
    contextManager: createPassthrough(),
    ...(messages && { onMessage: (message: Message) => messages.push(message) }),
  });
}

/** Run until `stopAt` says so (the process "dies" there), keeping every checkpoint as JSON. */
async function runUntil(
  shopping: ReturnType<typeof shop>,
  stopAt: (meta: CheckpointMeta) => boolean,
): Promise<Saved[]> {
  const saved: Saved[] = [];
  const controller = new AbortController();
  const died = new Promise<void>((resolve) => {
    const runner = runnerWith(shopping.script());
    runner
      .run(shopping.workflow, "Buy A1", {
        runId: "run-1",
        signal: controller.signal,
        checkpoint: (snapshot, meta) => {
          saved.push({ snapshot: JSON.parse(JSON.stringify(snapshot)), meta });
          if (stopAt(meta)) {
            resolve();
            return new Promise(() => {}); // never returns: the process is gone
          }
        },
      })
      .catch(() => {});
    // A hanging tool: the last checkpoint is the one before it.
    setTimeout(resolve, 200);
  });
  await died;
  controller.abort();
  return saved;
}

async function resumeFrom(shopping: ReturnType<typeof shop>, saved: Saved, options = {}) {
  const messages: Message[] = [];
  // The remaining script: what the model answers after the batch.
  const runner = runnerWith([toolCall("finish")], messages);
  const result = await runner.resume(shopping.workflow, saved.snapshot as never, {
    meta: saved.meta,
    ...options,
  });
  return { result, messages };
}

describe("checkpoints", () => {
  it("come before each LLM call, before each batch and after each call, in order, with their meta", async () => {
    const shopping = shop(undefined);
    const points: CheckpointMeta[] = [];
    await runnerWith(shopping.script()).run(shopping.workflow, "Buy A1", {
      runId: "run-1",
      checkpoint: (_snapshot, meta) => {
        points.push(meta);
      },
    });
    expect(points.map((point) => point.reason)).toEqual([
      "inference",
      "tools",
      "call_started",
      "call_done",
      "call_started",
      "call_done",
      "inference",
      "tools",
      "call_started",
      "call_done",
    ]);
    expect(points.map((point) => point.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(points[0]).toMatchObject({ runId: "run-1", workflow: "shop", machineVersion: MACHINE_VERSION });
    expect(points[0]?.definitionHash).toMatch(/^[0-9a-f]{16}$/);
  });

  it("give tools their call id, a stable idempotency key, the attempt and the run's signal", async () => {
    const shopping = shop(undefined);
    await runnerWith(shopping.script()).run(shopping.workflow, "Buy A1", { runId: "run-1" });
    const [charge] = shopping.calls;
    expect(charge?.context).toMatchObject({ runId: "run-1", attempt: 1, resumed: false });
    expect(charge?.context.idempotencyKey).toBe(`run-1:${charge?.context.callId}`);
    expect(charge?.context.signal).toBeInstanceOf(AbortSignal);
  });
});

describe("resuming from the last checkpoint", () => {
  it("after the first call of a batch finished: only the second runs again", async () => {
    const shopping = shop(undefined);
    const saved = await runUntil(shopping, (meta) => meta.reason === "call_done" && meta.seq === 4);
    expect(shopping.calls.map((call) => call.tool)).toEqual(["charge_card"]);
    const { result } = await resumeFrom(shopping, saved.at(-1) as Saved);
    expect(result).toBe("ok");
    expect(shopping.calls.map((call) => call.tool)).toEqual(["charge_card", "send_receipt"]);
  });

  it("in the middle of an idempotent call: it runs again with the same idempotency key", async () => {
    const shopping = shop("idempotent", { tool: "charge_card" });
    const saved = await runUntil(shopping, () => false);
    expect(saved.at(-1)?.meta).toMatchObject({ reason: "call_started" });
    await resumeFrom(shopping, saved.at(-1) as Saved);
    const charges = shopping.calls.filter((call) => call.tool === "charge_card");
    expect(charges).toHaveLength(2);
    // Every call gets a checkpoint when it starts, so the restored run knows this one had started.
    expect(charges[0]?.context).toMatchObject({ attempt: 1, resumed: false });
    expect(charges[1]?.context).toMatchObject({ attempt: 2, resumed: true });
    expect(charges[1]?.context.idempotencyKey).toBe(charges[0]?.context.idempotencyKey);
  });

  it("in the middle of an unsafe call: it is not run again; the model hears OutcomeUnknown", async () => {
    const shopping = shop("unsafe", { tool: "charge_card" });
    const saved = await runUntil(shopping, () => false);
    expect(saved.at(-1)?.meta).toMatchObject({ reason: "call_started" });
    const messages: Message[] = [];
    const runner = runnerWith([toolCall("finish")], messages);
    // The run goes on: the model decides (here the scripted model just finishes... which the
    // step rule refuses, since charge_card never completed). Ask for the history instead.
    await runner
      .resume(shopping.workflow, (saved.at(-1) as Saved).snapshot as never, {
        meta: (saved.at(-1) as Saved).meta,
      })
      .catch(() => {});
    expect(shopping.calls.filter((call) => call.tool === "charge_card")).toHaveLength(1);
    const unknown = messages.find((message) => message.content.includes("OutcomeUnknown"));
    expect(unknown?.metadata.type).toBe(MessageType.TOOL_RESULT);
    expect(unknown?.content).toMatch(/^\[ToolError\] OutcomeUnknown: 'charge_card' was interrupted/);
  });

  it("in the middle of an unsafe call, with unsafeInterrupted: fail, fails with OutcomeUnknownError", async () => {
    const shopping = shop("unsafe", { tool: "charge_card" });
    const saved = (await runUntil(shopping, () => false)).at(-1) as Saved;
    const error = await runnerWith([])
      .resume(shopping.workflow, saved.snapshot as never, { meta: saved.meta, unsafeInterrupted: "fail" })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect(shopping.calls.filter((call) => call.tool === "charge_card")).toHaveLength(1);
  });

  it("refuses a checkpoint of another workflow definition or machine version", async () => {
    const shopping = shop(undefined);
    const saved = (await runUntil(shopping, (meta) => meta.seq === 1)).at(-1) as Saved;
    const changed = shop("unsafe"); // charge_card's effects changed: another definition
    const runner = runnerWith([]);
    await expect(
      runner.resume(changed.workflow, saved.snapshot as never, { meta: saved.meta }),
    ).rejects.toThrow(CheckpointMismatchError);
    await expect(
      runner.resume(shopping.workflow, saved.snapshot as never, {
        meta: { ...saved.meta, machineVersion: 1 },
      }),
    ).rejects.toThrow(/machineVersion is 1, this runner.s is 2 or 3 or 4/);
  });

  it("resumes a checkpoint of machine version 2, whose LLM call in flight holds its history", async () => {
    const shopping = shop(undefined);
    // The first checkpoint: before the first LLM call, which is in flight.
    const saved = (await runUntil(shopping, (meta) => meta.seq === 1)).at(-1) as Saved;
    expect(saved.meta).toMatchObject({ reason: "inference", machineVersion: MACHINE_VERSION });
    const snapshot = saved.snapshot as {
      context: { messages: unknown[] };
      children: { inference: { snapshot: { pending: { request: Record<string, unknown> } } } };
    };
    const { request } = snapshot.children.inference.snapshot.pending;
    expect(request).not.toHaveProperty("messages");
    // As version 2 wrote it: the request holds the history.
    request.messages = snapshot.context.messages;
    const runner = runnerWith(shopping.script());
    await expect(
      runner.resume(shopping.workflow, snapshot as never, { meta: { ...saved.meta, machineVersion: 2 } }),
    ).resolves.toBe("ok");
    expect(shopping.calls.map((call) => call.tool)).toEqual(["charge_card", "send_receipt"]);
  });
});
