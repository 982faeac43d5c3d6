/**
 * Per-step tool subsets on the runner: the tools each request offers (as a scripted client
 * receives them), the unknown-tool reply to a call outside the subset, the user's `activeTools`,
 * and a run resumed from a checkpoint.
 */
import { describe, expect, it } from "vitest";
import type { Snapshot } from "xstate";
import { WorkflowDefinitionError } from "../../src/core/errors.ts";
import { MessageType } from "../../src/core/messages.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import { flightWorkflow, offeredNames } from "../helpers/flight-workflow.ts";
import { createPassthrough, rejectionOf, scriptedRunner } from "../helpers/workflows.ts";

const ALL = [
  "search_flights",
  "get_flight_status",
  "book_hotel",
  "get_gate_info",
  "cancel_booking",
  "notify_passenger",
];

const happyPath = () => [
  toolCall("get_flight_status", { flight: "TP1" }),
  toolCall("get_gate_info", { flight: "TP1" }),
  toolCall("notify_passenger", { flight: "TP1" }),
];

describe("toolSubsets: steps", () => {
  it("offers each request only the tools that can make progress now", async () => {
    const { workflow } = flightWorkflow();
    const { client, runner } = scriptedRunner(happyPath(), { toolSubsets: "steps" });
    await expect(runner.run(workflow, "TP1?")).resolves.toEqual({ tool: "notify_passenger", flight: "TP1" });
    client.assertDone();
    expect(client.calls.map(offeredNames)).toEqual([
      ["get_flight_status", "get_gate_info"],
      ["get_flight_status", "get_gate_info"],
      ["notify_passenger"],
    ]);
  });

  it("offers every tool by default and with `all`", async () => {
    for (const toolSubsets of [undefined, "all"] as const) {
      const { workflow } = flightWorkflow();
      const { client, runner } = scriptedRunner(happyPath(), toolSubsets ? { toolSubsets } : {});
      await runner.run(workflow, "TP1?");
      expect(client.calls.map(offeredNames)).toEqual([ALL, ALL, ALL]);
    }
  });

  it("answers a call to a tool outside the subset with the unknown-tool reply, and does not run it", async () => {
    const { workflow, executed } = flightWorkflow();
    const { client, runner, messages } = scriptedRunner(
      [toolCall("search_flights", { flight: "TP1" }), ...happyPath()],
      { toolSubsets: "steps" },
    );
    await runner.run(workflow, "TP1?");
    expect(executed).toEqual(["get_flight_status:TP1", "get_gate_info:TP1", "notify_passenger:TP1"]);
    const reply = messages.find((message) => message.metadata.type === MessageType.RETRY_NUDGE);
    expect(reply?.role).toBe("tool");
    expect(reply?.content).toMatch(/^\[UnknownTool\]/);
    expect(reply?.content).toContain("does not exist");
    expect(reply?.content).toContain("search_flights");
    // It lists the tools on offer, not the hidden ones.
    expect(reply?.content).toContain("get_flight_status");
    expect(reply?.content).not.toContain("book_hotel");
    expect(client.calls).toHaveLength(4);
  });

  it("counts calls outside the subset against maxRetriesPerStep like unknown tools", async () => {
    const { workflow } = flightWorkflow();
    const { runner } = scriptedRunner(
      [toolCall("book_hotel", { flight: "TP1" }), toolCall("book_hotel", { flight: "TP1" })],
      { toolSubsets: "steps", maxRetriesPerStep: 1 },
    );
    const error = await rejectionOf(runner.run(workflow, "TP1?"));
    expect(error.name).toBe("ToolCallError");
    expect(error.message).toContain("Retries exhausted");
  });

  it("keeps the subset when a run resumes from a checkpoint", async () => {
    const { workflow } = flightWorkflow();
    const snapshots: Snapshot<unknown>[] = [];
    const first = scriptedRunner(
      [toolCall("get_flight_status", { flight: "TP1" }), new Error("backend down")],
      {
        toolSubsets: "steps",
      },
    );
    await rejectionOf(
      first.runner.run(workflow, "TP1?", {
        checkpoint: (snapshot) => {
          snapshots.push(JSON.parse(JSON.stringify(snapshot)));
        },
      }),
    );
    const second = scriptedRunner(happyPath().slice(1), { toolSubsets: "steps" });
    await second.runner.resume(workflow, snapshots.at(-1) as Snapshot<unknown>);
    expect(second.client.calls.map(offeredNames)).toEqual([
      ["get_flight_status", "get_gate_info"],
      ["notify_passenger"],
    ]);
  });

  it("rejects a toolSubsets value it does not know", () => {
    expect(
      () =>
        new WorkflowRunner({
          client: new ScriptedClient([]),
          contextManager: createPassthrough(),
          toolSubsets: "some" as never,
        }),
    ).toThrow(/toolSubsets must be one of "all", "steps", got "some"/);
  });
});

describe("activeTools", () => {
  it("chooses the tools of each request from the step state", async () => {
    const { workflow } = flightWorkflow();
    const iterations: number[] = [];
    const { client, runner } = scriptedRunner(happyPath(), {
      toolSubsets: "steps",
      // The derived subset, plus a lookup tool the workflow does not require.
      activeTools: (state) => {
        iterations.push(state.iteration);
        return state.pendingSteps.length > 0 ? [...state.derived, "search_flights"] : state.derived;
      },
    });
    await runner.run(workflow, "TP1?");
    expect(iterations).toEqual([1, 2, 3]);
    expect(client.calls.map(offeredNames)).toEqual([
      ["search_flights", "get_flight_status", "get_gate_info"],
      ["search_flights", "get_flight_status", "get_gate_info"],
      ["notify_passenger"],
    ]);
  });

  it("fails the run with WorkflowDefinitionError when it names a tool that does not exist", async () => {
    const { workflow } = flightWorkflow();
    const { client, runner } = scriptedRunner(happyPath(), { activeTools: () => ["get_weather"] });
    const error = await rejectionOf(runner.run(workflow, "TP1?"));
    expect(error).toBeInstanceOf(WorkflowDefinitionError);
    expect(error.message).toContain('"get_weather", not tools of this workflow');
    expect(client.calls).toHaveLength(0);
  });
});
