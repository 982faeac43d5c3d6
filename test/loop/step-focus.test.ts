/**
 * A premature terminal call on the runner (docs/decisions/025): its reply writes out the pending
 * step's call with the values the model already had, and the next request offers only the pending
 * steps' tools until a clean batch, while a call to a left-out tool is still judged as before.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { StepEnforcementError } from "../../src/core/errors.ts";
import { MessageType } from "../../src/core/messages.ts";
import { defineTool } from "../../src/core/tools.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { text, toolCall } from "../../src/testing/index.ts";
import { offeredNames } from "../helpers/flight-workflow.ts";
import { scriptedRunner } from "../helpers/workflows.ts";

function orderWorkflow() {
  return defineWorkflow({
    name: "order-status",
    description: "Look up an order, then report it",
    tools: [
      defineTool({
        name: "lookup_order_status",
        description: "Look up an order's status",
        parameters: z.object({ order_id: z.string() }),
        execute: ({ order_id }) => `Order ${order_id}: shipped`,
      }),
      defineTool({
        name: "get_faq",
        description: "Frequently asked questions",
        parameters: z.object({}),
        execute: () => "FAQ",
      }),
      defineTool({
        name: "report_status",
        description: "Report the order's status",
        parameters: z.object({ order_id: z.string(), status: z.string() }),
        execute: ({ order_id, status }) => ({ order_id, status }),
      }),
    ],
    requiredSteps: ["lookup_order_status"],
    terminalTool: "report_status",
    systemPrompt: "Look up the order, then report its status.",
  });
}

const ALL = ["lookup_order_status", "get_faq", "report_status"];
const premature = () => toolCall("report_status", { order_id: "A-1042", status: "unknown" });

describe("a premature terminal call", () => {
  it("is answered with the pending step's call, and the next request offers only that step", async () => {
    const { client, runner, messages } = scriptedRunner([
      premature(),
      toolCall("lookup_order_status", { order_id: "A-1042" }),
      toolCall("report_status", { order_id: "A-1042", status: "shipped" }),
    ]);
    await expect(runner.run(orderWorkflow(), "Report order A-1042")).resolves.toEqual({
      order_id: "A-1042",
      status: "shipped",
    });
    client.assertDone();
    const nudges = messages.filter((message) => message.metadata.type === MessageType.STEP_NUDGE);
    expect(nudges.map((message) => message.content)).toEqual([
      '[StepEnforcementError] You cannot call report_status yet. These required steps are not done: lookup_order_status. Call them first, then call report_status. Call lookup_order_status({"order_id": "A-1042"}) now.',
    ]);
    // The step's clean batch ends the focus: every tool again, the choice the model's.
    expect(client.calls.map(offeredNames)).toEqual([ALL, ["lookup_order_status"], ALL]);
    expect(client.calls.map((call) => call.toolChoice)).toEqual([undefined, "required", undefined]);
  });

  it("keeps the focus through a prose answer, and judges a call to the left-out terminal tool as premature", async () => {
    const { client, runner, messages } = scriptedRunner(
      [premature(), text("I will report it."), premature(), premature()],
      { maxPrematureAttempts: 2 },
    );
    await expect(runner.run(orderWorkflow(), "Report order A-1042")).rejects.toBeInstanceOf(
      StepEnforcementError,
    );
    client.assertDone();
    expect(client.calls.map(offeredNames)).toEqual([
      ALL,
      ["lookup_order_status"],
      ["lookup_order_status"],
      ["lookup_order_status"],
    ]);
    expect(client.calls.map((call) => call.toolChoice)).toEqual([
      undefined,
      "required",
      "required",
      "required",
    ]);
    const nudges = messages.filter((message) => message.metadata.type === MessageType.STEP_NUDGE);
    expect(nudges).toHaveLength(2);
    expect(nudges[1]?.content).toMatch(
      /rejected again.*Call lookup_order_status\(\{"order_id": "A-1042"\}\) now\.$/,
    );
  });

  it("leaves the choice to the model after a premature call when forceToolChoiceOnRetry is off", async () => {
    const { client, runner } = scriptedRunner(
      [
        premature(),
        toolCall("lookup_order_status", { order_id: "A-1042" }),
        toolCall("report_status", { order_id: "A-1042", status: "shipped" }),
      ],
      { forceToolChoiceOnRetry: false },
    );
    await runner.run(orderWorkflow(), "Report order A-1042");
    expect(client.calls.map(offeredNames)).toEqual([ALL, ["lookup_order_status"], ALL]);
    expect(client.calls.map((call) => call.toolChoice)).toEqual([undefined, undefined, undefined]);
  });

  it("leaves the tools alone without step enforcement's premature streak", async () => {
    const { client, runner } = scriptedRunner([
      toolCall("get_faq"),
      toolCall("lookup_order_status", { order_id: "A-1042" }),
      toolCall("report_status", { order_id: "A-1042", status: "shipped" }),
    ]);
    await runner.run(orderWorkflow(), "Report order A-1042");
    expect(client.calls.map(offeredNames)).toEqual([ALL, ALL, ALL]);
  });
});
