/**
 * Approval as its own step of the workflow machine (ADR 036): a batch naming a tool that declares
 * `needsApproval` goes through `approve`, whose screen parks it in `awaitingApproval` or lets it
 * run; a batch without one never enters it. A denied call is answered with status `denied` and
 * told to observers; a parked snapshot resumes after a JSON round trip, and a batch restored
 * mid-run from an older snapshot (its worker's request holding only the calls) never runs a
 * denied call.
 */
import { describe, expect, it } from "vitest";
import { createActor, type InspectionEvent, toPromise } from "xstate";
import { z } from "zod";
import type { ToolCallEvent, ToolResultEvent } from "../../src/core/run-observer.ts";
import { defineTool } from "../../src/core/tools.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import type { CheckpointMeta } from "../../src/loop/checkpoint.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import type { WorkflowOutput, WorkflowSnapshot } from "../../src/machines/workflow.machine.ts";
import type { ToolOutcome } from "../../src/machines/workflow-context.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import { createPassthrough } from "../helpers/workflows.ts";

/** lookup (no approval), pay (approval above 100), notify (always), finish (terminal). */
function shop(ran: string[]) {
  return defineWorkflow({
    name: "shop",
    description: "Pay and tell",
    tools: [
      defineTool({
        name: "lookup",
        description: "Balance",
        parameters: z.object({ account: z.string() }),
        execute: ({ account }) => {
          ran.push("lookup");
          return `${account}: 500`;
        },
      }),
      defineTool({
        name: "pay",
        description: "Pay",
        parameters: z.object({ amount: z.number() }),
        needsApproval: ({ amount }) => Number(amount) > 100,
        execute: ({ amount }) => {
          ran.push("pay");
          return `paid ${amount}`;
        },
      }),
      defineTool({
        name: "notify",
        description: "Tell",
        parameters: z.object({ text: z.string() }),
        needsApproval: true,
        execute: ({ text }) => {
          ran.push("notify");
          return `told: ${text}`;
        },
      }),
      defineTool({ name: "finish", description: "Done", parameters: z.object({}), execute: () => "ok" }),
    ],
    terminalTool: "finish",
    systemPrompt: "Shop.",
  });
}

const PARKING_BATCH = [
  { tool: "lookup", args: { account: "A1" } },
  { tool: "pay", args: { amount: 250 } },
  { tool: "notify", args: { text: "paid" } },
];

/** A workflow actor of `shop`, recording its state values, the tools worker's outcomes and tool events. */
function shopActor(
  script: ConstructorParameters<typeof ScriptedClient>[0],
  options: { snapshot?: unknown; checkpoint?: (snapshot: unknown, meta: CheckpointMeta) => void } = {},
) {
  const ran: string[] = [];
  const workflow = shop(ran);
  const runner = new WorkflowRunner({
    client: new ScriptedClient(script),
    contextManager: createPassthrough(),
  });
  const toolEvents: (ToolCallEvent | ToolResultEvent)[] = [];
  const machine = runner.machineFor(workflow, {
    observers: [
      { onToolCall: (event) => toolEvents.push(event), onToolResult: (event) => toolEvents.push(event) },
    ],
    ...(options.checkpoint && { checkpoint: options.checkpoint }),
  });
  const batches: ToolOutcome[][] = [];
  const inspect = (event: InspectionEvent) => {
    if (event.type === "@xstate.event" && event.event.type === "tools.done") batches.push(event.event.output);
  };
  const actor = options.snapshot
    ? createActor(machine, { snapshot: options.snapshot as WorkflowSnapshot, inspect } as never)
    : createActor(machine, {
        input: runner.inputFor(workflow, "Pay 250 and tell me", { runId: "shop-1" }),
        inspect,
      });
  const states: unknown[] = [];
  actor.subscribe((snapshot) => states.push(snapshot.value));
  return { actor, ran, states, batches, toolEvents };
}

/** Resolves once the actor rests in `awaitingApproval`. */
function parked(actor: ReturnType<typeof shopActor>["actor"]): Promise<WorkflowSnapshot> {
  return new Promise((resolve) => {
    const check = (snapshot: WorkflowSnapshot) => {
      if (snapshot.matches("awaitingApproval")) resolve(snapshot);
    };
    actor.subscribe(check);
    check(actor.getSnapshot());
  });
}

describe("the approve step", () => {
  it("screens a batch with an approval tool in `approve` and parks it in `awaitingApproval`, nothing run", async () => {
    const { actor, ran, states, batches } = shopActor([PARKING_BATCH]);
    actor.start();
    const snapshot = await parked(actor);
    expect(states).toContain("approve");
    expect(states.indexOf("approve")).toBeLessThan(states.indexOf("awaitingApproval"));
    expect(states).not.toContain("execute");
    expect(snapshot.context.approval?.pending.map((call) => call.tool)).toEqual(["pay", "notify"]);
    expect(ran).toEqual([]);
    expect(batches).toEqual([]);
    actor.stop();
  });

  it("runs a batch its screen lets through, and never enters `approve` for a batch without approval tools", async () => {
    const { actor, ran, states } = shopActor([
      toolCall("lookup", { account: "A1" }),
      toolCall("pay", { amount: 20 }),
      toolCall("finish"),
    ]);
    actor.start();
    const output = (await toPromise(actor)) as WorkflowOutput;
    expect(output.status).toBe("done");
    expect(ran).toEqual(["lookup", "pay"]);
    // Passes: lookup (no approval tool), pay 20 (screened, not held), finish.
    const visited = states.filter((value, index) => value !== states[index - 1]);
    expect(visited.filter((value) => value === "approve")).toHaveLength(1);
    expect(visited.slice(visited.indexOf("approve"), visited.indexOf("approve") + 2)).toEqual([
      "approve",
      "execute",
    ]);
  });

  it("answers a denied call with status `denied`, in its place, and tells observers; it never runs", async () => {
    const { actor, ran, batches, toolEvents } = shopActor([PARKING_BATCH, toolCall("finish")]);
    actor.start();
    const snapshot = await parked(actor);
    const [pay, notify] = snapshot.context.approval?.pending ?? [];
    actor.send({
      type: "approval.decide",
      decisions: [
        { callId: pay?.callId as string, approved: false, reason: "over the limit" },
        { callId: notify?.callId as string, approved: true },
      ],
    });
    const output = (await toPromise(actor)) as WorkflowOutput;
    expect(output.status).toBe("done");
    expect(ran).toEqual(["lookup", "notify"]);
    expect(batches[0]?.map((outcome) => [outcome.tool, outcome.status])).toEqual([
      ["lookup", "ok"],
      ["pay", "denied"],
      ["notify", "ok"],
    ]);
    const content =
      "[ApprovalDenied] A person denied this call to 'pay'; it was not run. Reason: over the limit";
    expect(batches[0]?.[1]).toMatchObject({ status: "denied", content, errorName: "ApprovalDenied" });
    const denied = toolEvents.filter((event) => event.tool === "pay");
    // Told once, as a result only: it never ran, so no onToolCall came before it.
    expect(denied).toEqual([
      {
        runId: "shop-1",
        callId: pay?.callId,
        tool: "pay",
        args: { amount: 250 },
        attempt: 1,
        status: "denied",
        content,
        durationMs: 0,
      },
    ]);
    // The model reads the denial on the tool channel; the denied call is no completed step.
    expect(output.messages.find((message) => message.toolCallId === pay?.callId)?.content).toBe(content);
    expect(output.completedSteps).toEqual(["lookup", "notify", "finish"]);
  });

  it("parks, survives a JSON round trip of its snapshot, and resumes in a new actor", async () => {
    const first = shopActor([PARKING_BATCH]);
    first.actor.start();
    await parked(first.actor);
    const stored = JSON.parse(JSON.stringify(first.actor.getPersistedSnapshot()));
    first.actor.stop();
    expect(stored.value).toBe("awaitingApproval");

    const second = shopActor([toolCall("finish")], { snapshot: stored });
    second.actor.start();
    const pending = second.actor.getSnapshot().context.approval?.pending ?? [];
    second.actor.send({
      type: "approval.decide",
      decisions: pending.map((call) => ({ callId: call.callId, approved: true })),
    });
    const output = (await toPromise(second.actor)) as WorkflowOutput;
    expect(output.status).toBe("done");
    expect(second.ran).toEqual(["lookup", "pay", "notify"]);
    expect(second.states).not.toContain("approve");
  });

  it("never runs a denied call of a batch restored mid-run from a snapshot whose worker kept only the calls", async () => {
    // The `tools` checkpoint of the decided batch: the worker's request in flight, as version 4 kept it.
    let atTools: unknown;
    const first = shopActor([PARKING_BATCH], {
      checkpoint: (snapshot, meta) => {
        if (meta.reason === "tools" && atTools === undefined) atTools = JSON.parse(JSON.stringify(snapshot));
      },
    });
    first.actor.start();
    const snapshot = await parked(first.actor);
    const [pay, notify] = snapshot.context.approval?.pending ?? [];
    first.actor.send({
      type: "approval.decide",
      decisions: [
        { callId: pay?.callId as string, approved: false },
        { callId: notify?.callId as string, approved: true },
      ],
    });
    await new Promise<void>((resolve) => {
      const check = () => atTools !== undefined && resolve();
      first.actor.subscribe(check);
      check();
    });
    first.actor.stop();
    const stored = atTools as {
      value: unknown;
      children: { executeTools: { snapshot: { pending: { request: Record<string, unknown> } } } };
    };
    expect(stored.value).toBe("execute");
    const kept = stored.children.executeTools.snapshot.pending;
    kept.request = { calls: kept.request.calls };

    const second = shopActor([toolCall("finish")], { snapshot: stored });
    second.actor.start();
    const output = (await toPromise(second.actor)) as WorkflowOutput;
    expect(output.status).toBe("done");
    expect(second.ran).toEqual(["lookup", "notify"]);
    expect(second.batches[0]?.map((outcome) => outcome.status)).toEqual(["ok", "denied", "ok"]);
  });
});
