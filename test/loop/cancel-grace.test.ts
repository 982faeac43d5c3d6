/**
 * Cancelling a run while a tool runs: the tools' signal aborts at once, the run waits for the call
 * in flight up to `cancelGraceMs`, and records it as completed if it returns in time.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { WorkflowCancelledError } from "../../src/core/errors.ts";
import { type Message, MessageType } from "../../src/core/messages.ts";
import { defineTool, type ToolCallContext } from "../../src/core/tools.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import { createPassthrough, rejectionOf } from "../helpers/workflows.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `charge` aborts the run as soon as it starts, then settles `settleAfterAbortMs` after the abort
 * (`resolve`: with a receipt; `reject`: with the signal's reason; `never`: it hangs).
 */
function chargeWorkflow(settle: { afterAbortMs: number; how: "resolve" | "reject" | "never" }) {
  const controller = new AbortController();
  const log: { event: string; at: number; signalAborted?: boolean }[] = [];
  const charge = defineTool({
    name: "charge",
    description: "Charge the card",
    parameters: z.object({ amount: z.number() }),
    execute: ({ amount }, context?: ToolCallContext) =>
      new Promise((resolve, reject) => {
        log.push({ event: "charge started", at: Date.now() });
        setTimeout(() => {
          controller.abort();
          log.push({ event: "aborted", at: Date.now() });
          if (settle.how === "never") return;
          setTimeout(() => {
            log.push({
              event: "charge settled",
              at: Date.now(),
              signalAborted: context?.signal.aborted ?? false,
            });
            if (settle.how === "resolve") resolve({ receipt: `r-${amount}` });
            else reject(context?.signal.reason);
          }, settle.afterAbortMs);
        }, 0);
      }),
  });
  const email = defineTool({
    name: "email",
    description: "Email the receipt",
    parameters: z.object({}),
    execute: () => {
      log.push({ event: "email sent", at: Date.now() });
      return "sent";
    },
  });
  const finish = defineTool({
    name: "finish",
    description: "",
    parameters: z.object({}),
    execute: () => "ok",
  });
  const workflow = defineWorkflow({
    name: "checkout",
    description: "",
    tools: [charge, email, finish],
    terminalTool: "finish",
    systemPrompt: "s",
  });
  return { workflow, controller, log };
}

async function cancelledRun(
  settle: Parameters<typeof chargeWorkflow>[0],
  options: { cancelGraceMs?: number; batch?: boolean } = {},
) {
  const { workflow, controller, log } = chargeWorkflow(settle);
  const calls = options.batch
    ? [
        { tool: "charge", args: { amount: 5 } },
        { tool: "email", args: {} },
      ]
    : toolCall("charge", { amount: 5 });
  const appended: Message[] = [];
  const runner = new WorkflowRunner({
    client: new ScriptedClient([calls]),
    contextManager: createPassthrough(),
    onMessage: (message) => appended.push(message),
    ...(options.cancelGraceMs !== undefined && { cancelGraceMs: options.cancelGraceMs }),
  });
  const error = await rejectionOf(runner.run(workflow, "Check out", { signal: controller.signal }));
  log.push({ event: "run rejected", at: Date.now() });
  return { error, log, appended };
}

const results = (messages: Message[]) =>
  messages.filter((message) => message.metadata.type === MessageType.TOOL_RESULT);

describe("cancel while a tool runs", () => {
  it("waits for a tool that returns 100 ms after the abort and records it as completed", async () => {
    const { error, log, appended } = await cancelledRun({ afterAbortMs: 100, how: "resolve" });
    expect(error).toBeInstanceOf(WorkflowCancelledError);
    // The effect landed before run() rejected, with the tool's signal aborted.
    expect(log.map((entry) => entry.event)).toEqual([
      "charge started",
      "aborted",
      "charge settled",
      "run rejected",
    ]);
    expect(log[2]?.signalAborted).toBe(true);
    expect(error.completedSteps).toEqual(["charge"]);
    const last = error.messages.at(-1) as Message;
    expect(last).toMatchObject({ role: "tool", toolName: "charge", content: '{"receipt":"r-5"}' });
    expect(last.toolCallId).toBe(error.messages.at(-2).toolCalls[0].callId);
    expect(error.messages.some((message: Message) => message.content.includes("[Cancelled]"))).toBe(false);
    // onMessage heard the result too.
    expect(results(appended).map((message) => message.content)).toEqual(['{"receipt":"r-5"}']);
  });

  it("records a tool still running after the grace as cancelled, without waiting for it", async () => {
    const { error, log } = await cancelledRun({ afterAbortMs: 0, how: "never" }, { cancelGraceMs: 50 });
    expect(error).toBeInstanceOf(WorkflowCancelledError);
    expect(error.completedSteps).toEqual([]);
    expect(error.messages.at(-1)?.content).toContain("[Cancelled]");
    const waited = (log.at(-1)?.at ?? 0) - (log.find((entry) => entry.event === "aborted")?.at ?? 0);
    expect(waited).toBeGreaterThanOrEqual(40);
    expect(waited).toBeLessThan(2_000);
  });

  it("records a tool that returns after the grace as cancelled, and ignores its late result", async () => {
    const { error } = await cancelledRun({ afterAbortMs: 150, how: "resolve" }, { cancelGraceMs: 20 });
    expect(error.completedSteps).toEqual([]);
    expect(results(error.messages).map((message) => message.content)).toEqual([
      "[Cancelled] The run was cancelled before this tool returned.",
    ]);
    await sleep(200);
  });

  it("records a tool that throws after the abort (stopped by it) as cancelled", async () => {
    const { error } = await cancelledRun({ afterAbortMs: 10, how: "reject" });
    expect(error.completedSteps).toEqual([]);
    expect(error.messages.at(-1)?.content).toContain("[Cancelled]");
  });

  it("starts no further call of the batch: the next one is answered as cancelled", async () => {
    const { error, log } = await cancelledRun({ afterAbortMs: 20, how: "resolve" }, { batch: true });
    expect(log.map((entry) => entry.event)).not.toContain("email sent");
    expect(error.completedSteps).toEqual(["charge"]);
    expect(results(error.messages).map((message) => [message.toolName, message.content])).toEqual([
      ["charge", '{"receipt":"r-5"}'],
      ["email", "[Cancelled] The run was cancelled before this tool returned."],
    ]);
  });

  it.each([-1, 1.5, Number.NaN])("refuses cancelGraceMs %s", (cancelGraceMs) => {
    expect(
      () =>
        new WorkflowRunner({
          client: new ScriptedClient([]),
          contextManager: createPassthrough(),
          cancelGraceMs,
        }),
    ).toThrow(/cancelGraceMs/);
  });
});
