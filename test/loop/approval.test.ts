/**
 * Human approval in the loop: a batch with calls that need a person parks the run (nothing of
 * the batch runs, no process held), and the decisions resume it from the snapshot: approve, deny
 * (the reason on the tool channel), partial decisions, the typed errors, and a new process.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  ApprovalAlreadyDecidedError,
  ApprovalNotPendingError,
  ApprovalRunClosedError,
  AwaitingApprovalError,
} from "../../src/core/errors.ts";
import { type Message, MessageRole } from "../../src/core/messages.ts";
import { defineTool } from "../../src/core/tools.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import type { CheckpointMeta } from "../../src/loop/checkpoint.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import {
  effectCounts,
  paymentsScript,
  paymentsWorkflow,
  readEffects,
} from "../fixtures/approval/payments.ts";

const CHILD = new URL("../fixtures/approval/approval-child.ts", import.meta.url).pathname;
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "forge-approval-"));
  dirs.push(dir);
  return dir;
}

function runnerWith(script: ReturnType<typeof paymentsScript>, messages: Message[] = []) {
  return new WorkflowRunner({
    client: new ScriptedClient(script),
    contextManager: { maybeCompact: (history) => history },
    onMessage: (message) => messages.push(message),
  });
}

/** Run the payments workflow until it parks; the error, JSON round-tripped as a store keeps it. */
async function park(dir: string, checkpoints: CheckpointMeta[] = []) {
  const runner = runnerWith(paymentsScript().slice(0, 1));
  const error = await runner
    .run(paymentsWorkflow(dir), "Pay B2 250", {
      runId: "pay-1",
      checkpoint: (_s, meta) => void checkpoints.push(meta),
    })
    .then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
  expect(error).toBeInstanceOf(AwaitingApprovalError);
  const parked = error as AwaitingApprovalError;
  return {
    error: parked,
    snapshot: JSON.parse(JSON.stringify(parked.snapshot)),
    meta: parked.meta,
    callOf: (tool: string) => parked.approval.pending.find((call) => call.tool === tool)?.callId as string,
  };
}

function toolMessages(messages: readonly Message[]) {
  return messages.filter((message) => message.role === MessageRole.TOOL);
}

describe("a batch with calls that need approval", () => {
  it("parks before any call of the batch runs, with the pending calls, a snapshot and a checkpoint", async () => {
    const dir = tempDir();
    const checkpoints: CheckpointMeta[] = [];
    const { error } = await park(dir, checkpoints);
    expect(error.pending.map((call) => [call.tool, call.args])).toEqual([
      ["transfer", { to: "B2", amount: 250 }],
      ["notify", { text: "paid" }],
    ]);
    expect(error.runId).toBe("pay-1");
    expect(error.approval.decisions).toEqual([]);
    // The whole batch waits: lookup (no approval needed) did not run either.
    expect(readEffects(dir)).toEqual([]);
    expect((error.snapshot as unknown as { value: unknown }).value).toBe("awaitingApproval");
    expect(checkpoints.at(-1)).toMatchObject({ reason: "awaiting_approval", runId: "pay-1" });
  });

  it("runs the batch in the model's order once every call is approved", async () => {
    const dir = tempDir();
    const { snapshot, meta, callOf } = await park(dir);
    const messages: Message[] = [];
    const result = await runnerWith(paymentsScript().slice(1), messages).resume(
      paymentsWorkflow(dir),
      snapshot,
      {
        meta,
        decisions: [
          { callId: callOf("transfer"), approved: true },
          { callId: callOf("notify"), approved: true },
        ],
      },
    );
    expect(result).toBe("paid");
    expect(readEffects(dir).map((line) => line.split(" ")[0])).toEqual(["lookup", "transfer", "notify"]);
    expect(toolMessages(messages).map((message) => message.content)).toEqual([
      "A1: 500",
      "sent 250 to B2",
      "notified: paid",
      "paid",
    ]);
  });

  it("answers a denied call with the person's reason on the tool channel and never runs it", async () => {
    const dir = tempDir();
    const { snapshot, meta, callOf } = await park(dir);
    const messages: Message[] = [];
    await runnerWith(paymentsScript().slice(1), messages).resume(paymentsWorkflow(dir), snapshot, {
      meta,
      decisions: [
        { callId: callOf("transfer"), approved: false, reason: "over the daily limit" },
        { callId: callOf("notify"), approved: true },
      ],
    });
    expect(effectCounts(dir, "transfer")).toEqual({});
    const denied = toolMessages(messages).find((message) => message.toolCallId === callOf("transfer"));
    expect(denied?.content).toBe(
      "[ApprovalDenied] A person denied this call to 'transfer'; it was not run. Reason: over the daily limit",
    );
    expect(readEffects(dir).map((line) => line.split(" ")[0])).toEqual(["lookup", "notify"]);
  });

  it("keeps partial decisions in the snapshot and parks again until the last call is decided", async () => {
    const dir = tempDir();
    const { snapshot, meta, callOf } = await park(dir);
    const again = await runnerWith([])
      .resume(paymentsWorkflow(dir), snapshot, {
        meta,
        decisions: [{ callId: callOf("transfer"), approved: true }],
      })
      .then(
        () => undefined,
        (thrown: unknown) => thrown as AwaitingApprovalError,
      );
    expect(again).toBeInstanceOf(AwaitingApprovalError);
    expect(again?.pending.map((call) => call.tool)).toEqual(["notify"]);
    expect(again?.approval.decisions).toEqual([{ callId: callOf("transfer"), approved: true }]);
    expect(readEffects(dir)).toEqual([]);
    const partial = JSON.parse(JSON.stringify(again?.snapshot));
    // Deciding the approved call again is refused; the pending one resumes the batch.
    await expect(
      runnerWith([]).resume(paymentsWorkflow(dir), partial, {
        meta,
        decisions: [{ callId: callOf("transfer"), approved: false }],
      }),
    ).rejects.toThrow(ApprovalAlreadyDecidedError);
    await runnerWith(paymentsScript().slice(1)).resume(paymentsWorkflow(dir), partial, {
      meta,
      decisions: [{ callId: callOf("notify"), approved: false, reason: "not now" }],
    });
    expect(readEffects(dir).map((line) => line.split(" ")[0])).toEqual(["lookup", "transfer"]);
  });

  it("refuses a decision twice in one list, on a call that is not pending, and on a finished run", async () => {
    const dir = tempDir();
    const { snapshot, meta, callOf } = await park(dir);
    const resume = (decisions: { callId: string; approved: boolean }[], from: unknown = snapshot) =>
      runnerWith([]).resume(paymentsWorkflow(dir), from as never, { meta, decisions });
    await expect(
      resume([
        { callId: callOf("transfer"), approved: true },
        { callId: callOf("transfer"), approved: true },
      ]),
    ).rejects.toThrow(ApprovalAlreadyDecidedError);
    const notPending = (await resume([{ callId: "nosuchcall", approved: true }]).catch(
      (error: unknown) => error,
    )) as ApprovalNotPendingError;
    expect(notPending).toBeInstanceOf(ApprovalNotPendingError);
    expect(notPending.pendingCallIds).toEqual([callOf("transfer"), callOf("notify")]);
    expect(notPending.message).toContain("the pending calls are");
    const finished = { ...snapshot, status: "done", context: { ...snapshot.context, status: "done" } };
    await expect(resume([{ callId: callOf("transfer"), approved: true }], finished)).rejects.toThrow(
      ApprovalRunClosedError,
    );
    expect(readEffects(dir)).toEqual([]);
  });

  it("asks a needsApproval function with the parsed arguments and the run, and does not wait when it says no", async () => {
    const asked: unknown[] = [];
    const pay = defineTool({
      name: "pay",
      description: "Pay",
      parameters: z.object({ amount: z.coerce.number() }),
      needsApproval: async (args, context) => {
        asked.push([args, context.runId, context.callId.length, context.messages.length > 0]);
        return (args.amount as number) > 100;
      },
      execute: ({ amount }) => `paid ${amount}`,
    });
    const done = defineTool({
      name: "done",
      description: "Done",
      parameters: z.object({}),
      execute: () => "ok",
    });
    const workflow = defineWorkflow({
      name: "small",
      description: "small",
      tools: [pay, done],
      terminalTool: "done",
      systemPrompt: "Pay.",
    });
    const runner = new WorkflowRunner({
      client: new ScriptedClient([toolCall("pay", { amount: "20" }), toolCall("done")]),
      contextManager: { maybeCompact: (history) => history },
    });
    expect(await runner.run(workflow, "Pay 20", { runId: "small-1" })).toBe("ok");
    expect(asked).toEqual([[{ amount: 20 }, "small-1", 9, true]]);
  });

  it("refuses a needsApproval that is neither a boolean nor a function", () => {
    expect(() =>
      defineTool({
        name: "bad",
        description: "bad",
        parameters: z.object({}),
        needsApproval: "yes" as never,
        execute: () => null,
      }),
    ).toThrow(/needsApproval must be a boolean or a function/);
  });
});

describe("across processes", () => {
  const runChild = (args: string[]) =>
    new Promise<number | null>((resolve, reject) => {
      const child = spawn(process.execPath, ["--import", "tsx", CHILD, ...args], { stdio: "inherit" });
      child.on("error", reject);
      child.on("exit", (code) => resolve(code));
    });

  it("parks in one process and resumes in another from the persisted snapshot", async () => {
    const dir = tempDir();
    expect(await runChild(["park", dir])).toBe(0);
    const parked = JSON.parse(readFileSync(join(dir, "parked.json"), "utf8"));
    expect(parked.pending.map((call: { tool: string }) => call.tool)).toEqual(["transfer", "notify"]);
    expect(readEffects(dir)).toEqual([]);
    const [transfer, notify] = parked.pending.map((call: { callId: string }) => call.callId);
    const decisions = [
      { callId: transfer, approved: true },
      { callId: notify, approved: false, reason: "no mail today" },
    ];
    expect(await runChild(["resume", dir, JSON.stringify(decisions)])).toBe(0);
    const finished = JSON.parse(readFileSync(join(dir, "result.json"), "utf8"));
    expect(finished.result).toBe("paid");
    expect(finished.pid).not.toBe(parked.pid);
    expect(effectCounts(dir, "transfer")).toEqual({ [`pay-1:${transfer}`]: 1 });
    expect(effectCounts(dir, "notify")).toEqual({});
  });
});
