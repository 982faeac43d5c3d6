/**
 * `earlyCalls: "hold"` on the runner (docs/decisions/039): a batch whose early calls (the terminal
 * call while steps are pending, a call before its prerequisite) wait for its other calls runs those
 * and answers the early ones with a note, so every call id keeps one answer and nothing the model
 * wrote is lost; the default still rejects the whole batch.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type Message, MessageRole, MessageType } from "../../src/core/messages.ts";
import { defineTool } from "../../src/core/tools.ts";
import type { ToolCall } from "../../src/core/types.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { toolCall } from "../../src/testing/index.ts";
import { createPassthrough, scriptedRunner } from "../helpers/workflows.ts";

/** get_account → list_invoices → send_statement, recording which tools ran. */
function statementWorkflow(ran: string[]) {
  return defineWorkflow({
    name: "statement",
    description: "Look up an account and its invoices, then send the statement",
    tools: [
      defineTool({
        name: "get_account",
        description: "Look up an account",
        parameters: z.object({ account_id: z.string() }),
        execute: ({ account_id }) => {
          ran.push("get_account");
          return { account_id, email: "ada@example.com" };
        },
      }),
      defineTool({
        name: "list_invoices",
        description: "List an account's open invoices",
        parameters: z.object({ account_id: z.string() }),
        prerequisites: ["get_account"],
        execute: () => {
          ran.push("list_invoices");
          return [{ id: "I-1", amount: 120.5 }];
        },
      }),
      defineTool({
        name: "send_statement",
        description: "Send the statement",
        parameters: z.object({ email: z.string(), total_due: z.number() }),
        execute: ({ email, total_due }) => {
          ran.push("send_statement");
          return { sent: email, total_due };
        },
      }),
    ],
    requiredSteps: ["get_account", "list_invoices"],
    terminalTool: "send_statement",
    systemPrompt: "Send the account's statement.",
  });
}

const one = (tool: string, args: Record<string, unknown>): ToolCall =>
  (toolCall(tool, args) as ToolCall[])[0] as ToolCall;
const guess = () => one("send_statement", { email: "unknown", total_due: 0 });
const account = () => one("get_account", { account_id: "AC-311" });
const invoices = () => one("list_invoices", { account_id: "AC-311" });
const send = () => toolCall("send_statement", { email: "ada@example.com", total_due: 120.5 });

/** Each TOOL_CALL's ids against the role-`tool` answers that follow it. */
function answersPerCall(messages: readonly Message[]): Map<string, number> {
  const answers = new Map<string, number>();
  for (const message of messages) {
    if (message.metadata.type === MessageType.TOOL_CALL)
      for (const call of message.toolCalls ?? []) answers.set(call.callId, 0);
    if (message.role === MessageRole.TOOL && message.toolCallId !== undefined)
      answers.set(message.toolCallId, (answers.get(message.toolCallId) ?? 0) + 1);
  }
  return answers;
}

describe("earlyCalls: hold", () => {
  it("runs what can run now, holds the rest with a note each, and finishes on later answers", async () => {
    const ran: string[] = [];
    // Budgets of 0: a rejected batch would end the run at once.
    const { client, runner, messages } = scriptedRunner(
      [[guess(), account(), invoices()], [invoices()], send()],
      {
        earlyCalls: "hold",
        maxPrematureAttempts: 0,
        maxPrereqViolations: 0,
      },
    );
    await expect(runner.run(statementWorkflow(ran), "Send AC-311's statement")).resolves.toEqual({
      sent: "ada@example.com",
      total_due: 120.5,
    });
    client.assertDone();
    expect(ran).toEqual(["get_account", "list_invoices", "send_statement"]);
    const first = messages.filter((message) => message.metadata.stepIndex === 0);
    expect(first.map((message) => [message.role, message.metadata.type, message.toolName ?? null])).toEqual([
      [MessageRole.ASSISTANT, MessageType.TOOL_CALL, null],
      [MessageRole.TOOL, MessageType.STEP_NUDGE, "send_statement"],
      [MessageRole.TOOL, MessageType.PREREQUISITE_NUDGE, "list_invoices"],
      [MessageRole.TOOL, MessageType.TOOL_RESULT, "get_account"],
    ]);
    // The TOOL_CALL keeps the batch as written, the held calls included with their arguments.
    expect(first[0]?.toolCalls?.map((call) => [call.name, call.args])).toEqual([
      ["send_statement", { email: "unknown", total_due: 0 }],
      ["get_account", { account_id: "AC-311" }],
      ["list_invoices", { account_id: "AC-311" }],
    ]);
    expect(first[1]?.toolCallId).toBe(first[0]?.toolCalls?.[0]?.callId);
    expect(first[2]?.toolCallId).toBe(first[0]?.toolCalls?.[2]?.callId);
    expect(first[1]?.content).toBe(
      "[StepEnforcementError] Held back: send_statement was not run. You called it in the same answer as get_account, before their results existed. Those run now and their results follow. The required steps list_invoices are still to do after them. Then call send_statement again, with values taken from those results.",
    );
    expect(first[2]?.content).toBe(
      "[PrereqError] Held back: list_invoices was not run. It needs the result of get_account, which you called in the same answer. That runs now and its result follows. Then call list_invoices again, with values taken from that result.",
    );
    expect([...answersPerCall(messages).values()].every((count) => count === 1)).toBe(true);
  });

  it("runs the steps the batch gives in order, the real 1.5B's [get_account, list_invoices, send_statement]", async () => {
    const ran: string[] = [];
    const { runner, messages } = scriptedRunner(
      [[account(), invoices(), guess()], [invoices(), guess()], send()],
      {
        earlyCalls: "hold",
      },
    );
    await runner.run(statementWorkflow(ran), "Send AC-311's statement");
    expect(ran).toEqual(["get_account", "list_invoices", "send_statement"]);
    const notes = messages.filter(
      (message) => message.content.startsWith("[") && message.content.includes("Held back"),
    );
    expect(notes.map((message) => [message.metadata.stepIndex, message.toolName])).toEqual([
      [0, "list_invoices"],
      [0, "send_statement"],
      [1, "send_statement"],
    ]);
  });

  it("still rejects a terminal call whose batch calls no pending step", async () => {
    const ran: string[] = [];
    const { runner, messages } = scriptedRunner([[guess()], [account()], [invoices()], send()], {
      earlyCalls: "hold",
    });
    await runner.run(statementWorkflow(ran), "Send AC-311's statement");
    expect(ran).toEqual(["get_account", "list_invoices", "send_statement"]);
    const notes = messages.filter((message) => message.metadata.type === MessageType.STEP_NUDGE);
    expect(notes).toHaveLength(1);
    expect(notes[0]?.content).toContain("You cannot call send_statement yet");
  });

  it("is off by default: the whole batch is rejected and nothing runs", async () => {
    const ran: string[] = [];
    const { runner, messages } = scriptedRunner([
      [guess(), account(), invoices()],
      [account()],
      [invoices()],
      send(),
    ]);
    await runner.run(statementWorkflow(ran), "Send AC-311's statement");
    expect(ran).toEqual(["get_account", "list_invoices", "send_statement"]);
    const first = messages.filter(
      (message) => message.metadata.stepIndex === 0 && message.role === MessageRole.TOOL,
    );
    expect(first.map((message) => message.metadata.type)).toEqual([
      MessageType.STEP_NUDGE,
      MessageType.STEP_NUDGE,
      MessageType.STEP_NUDGE,
    ]);
    expect(first[1]?.content).toMatch(/^\[StepEnforcementError\] \[NotRun\] 'get_account' was not run/);
  });

  it("rejects an unknown value with a RangeError that names the two", () => {
    expect(
      () =>
        new WorkflowRunner({
          client: scriptedRunner([]).client,
          contextManager: createPassthrough(),
          earlyCalls: "defer" as "hold",
        }),
    ).toThrow(/earlyCalls must be "reject" or "hold", got "defer"/);
  });
});
