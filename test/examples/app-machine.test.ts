import { describe, expect, it } from "vitest";
import { createActor, toPromise } from "xstate";
import { createSupportDeskMachine, main } from "../../examples/app-machine.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import { respondTool } from "../../src/tools/respond.ts";
import { createPassthrough } from "../helpers/workflows.ts";

describe("examples/app-machine", () => {
  it("collects a resolved, a failed and a cancelled ticket with their typed errors", async () => {
    const lines: string[] = [];
    const tickets = await main((line) => lines.push(line));
    expect(tickets["T-1"]).toEqual({
      desk: "refund",
      request: "Refund order A17",
      status: "resolved",
      result: { refundId: "R-A17", amount: 42.5 },
      error: null,
      iterations: 2,
    });
    expect(tickets["T-2"]).toMatchObject({ desk: "shipping", status: "failed", iterations: 2 });
    expect(tickets["T-2"]?.error?.name).toBe("ToolExecutionError");
    expect(tickets["T-2"]?.error?.message).toContain("carrier API timed out");
    expect(tickets["T-3"]).toMatchObject({ desk: "warranty", status: "cancelled", iterations: 1 });
    expect(tickets["T-3"]?.error?.name).toBe("WorkflowCancelledError");
    expect(JSON.parse(JSON.stringify(tickets))).toEqual(tickets);
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(/^T-2 \[shipping\] failed/);
  });

  it("spawns each ticket as a child workflow actor and ignores unknown desks", async () => {
    const client = new ScriptedClient([toolCall("respond", { message: "hello" })]);
    const runner = new WorkflowRunner({ client, contextManager: createPassthrough() });
    const workflow = defineWorkflow({
      name: "greet",
      description: "",
      tools: [respondTool()],
      terminalTool: "respond",
      systemPrompt: "Greet.",
    });
    const desk = createActor(createSupportDeskMachine({ greet: { workflow, runner } })).start();
    desk.send({ type: "ticket.submit", ticketId: "G-1", desk: "greet", request: "hi" });
    desk.send({ type: "ticket.submit", ticketId: "X-1", desk: "nowhere", request: "hi" });
    expect(Object.keys(desk.getSnapshot().context.tickets)).toEqual(["G-1"]);
    expect(Object.keys(desk.getSnapshot().children)).toEqual(["G-1"]);
    desk.send({ type: "desk.close" });
    const tickets = await toPromise(desk);
    expect(tickets["G-1"]).toMatchObject({ status: "resolved", result: "hello", iterations: 1 });
    expect(client.calls[0]?.messages.map((message) => message.content)).toEqual(["Greet.", "hi"]);
  });
});
