/**
 * Escalation on the runner: after n consecutive failures of one kind the next call goes to the
 * stronger client, then back (or it stays); each call's client and every switch are recorded in
 * the machine's output and in the run's checkpoints.
 */
import { describe, expect, it } from "vitest";
import { createActor, type Snapshot } from "xstate";
import type { LLMClient } from "../../src/core/types.ts";
import type { Workflow } from "../../src/core/workflow.ts";
import type { EscalationRecord } from "../../src/guardrails/escalation.ts";
import { WorkflowRunner, type WorkflowRunnerOptions } from "../../src/loop/runner.ts";
import type { WorkflowOutput } from "../../src/machines/workflow.machine.ts";
import { ScriptedClient, text, toolCall } from "../../src/testing/index.ts";
import { escalationScripts, flightWorkflow } from "../helpers/flight-workflow.ts";
import { createPassthrough, rejectionOf, weatherWorkflow } from "../helpers/workflows.ts";

const prose = "Let me check that flight for you.";

function runnerWith(client: LLMClient, options: Partial<WorkflowRunnerOptions>) {
  return new WorkflowRunner({ client, contextManager: createPassthrough(), ...options });
}

/** Run to the end through the runner's machine, for its output (the record is part of it). */
async function outputOf(
  runner: WorkflowRunner,
  workflow: Workflow,
  message: string,
  promptVars?: Record<string, string>,
): Promise<WorkflowOutput> {
  const actor = createActor(runner.machineFor(workflow), {
    input: runner.inputFor(workflow, message, promptVars ? { promptVars } : {}),
  });
  const done = new Promise<WorkflowOutput>((resolve, reject) =>
    actor.subscribe({ complete: () => resolve(actor.getSnapshot().output as WorkflowOutput), error: reject }),
  );
  actor.start();
  return done;
}

describe("escalation", () => {
  it("sends the call after n failures of one kind to the stronger client, then goes back", async () => {
    const { workflow } = flightWorkflow();
    const scripts = escalationScripts(text(prose));
    const base = new ScriptedClient(scripts.base);
    const strong = new ScriptedClient(scripts.strong);
    const runner = runnerWith(base, { escalation: { after: 2, client: strong, name: "strong" } });
    const output = await outputOf(runner, workflow, "TP1?");
    expect(output.status).toBe("done");
    base.assertDone();
    strong.assertDone();
    expect(output.escalation).toEqual({
      tier: 0,
      servedBy: ["base", "base", "strong", "base", "base"],
      switches: [
        { iteration: 3, from: "base", to: "strong", reason: "retries", streak: 2 },
        { iteration: 4, from: "strong", to: "base", reason: "recovered", streak: 0 },
      ],
    } satisfies EscalationRecord);
    // The stronger client got the whole history, nudges included.
    expect(strong.calls[0]?.messages.filter((message) => message.role === "user")).toHaveLength(3);
  });

  it("stays on the stronger client for the rest of the run with stay", async () => {
    const { workflow } = flightWorkflow();
    const base = new ScriptedClient([text(prose), text(prose)]);
    const strong = new ScriptedClient([
      toolCall("get_flight_status", { flight: "TP1" }),
      toolCall("get_gate_info", { flight: "TP1" }),
      toolCall("notify_passenger", { flight: "TP1" }),
    ]);
    const runner = runnerWith(base, { escalation: { after: 2, client: strong, stay: true } });
    const output = await outputOf(runner, workflow, "TP1?");
    expect(output.status).toBe("done");
    expect(output.escalation?.servedBy).toEqual([
      "base",
      "base",
      "escalation-1",
      "escalation-1",
      "escalation-1",
    ]);
    expect(output.escalation?.switches).toHaveLength(1);
  });

  it("counts tool errors as their own kind", async () => {
    const { workflow } = weatherWorkflow({ failWeather: 2 });
    const call = toolCall("get_weather", { city: "Paris" });
    const base = new ScriptedClient([
      call,
      call,
      toolCall("report_weather", { city: "Paris", weather: "sunny" }),
    ]);
    const strong = new ScriptedClient([call]);
    const runner = runnerWith(base, { escalation: { after: 2, client: strong } });
    const output = await outputOf(runner, workflow, "Paris?", { user: "Ada" });
    expect(output.status).toBe("done");
    expect(output.escalation?.servedBy).toEqual(["base", "base", "escalation-1", "base"]);
    expect(output.escalation?.switches[0]).toMatchObject({ reason: "tool_errors", streak: 2 });
  });

  it("climbs a list of tiers, one step per failure, and comes back down once the streak ends", async () => {
    const { workflow } = flightWorkflow();
    const base = new ScriptedClient([
      text(prose),
      toolCall("get_gate_info", { flight: "TP1" }),
      toolCall("notify_passenger", { flight: "TP1" }),
    ]);
    const medium = new ScriptedClient([text(prose)]);
    const large = new ScriptedClient([toolCall("get_flight_status", { flight: "TP1" })]);
    const runner = runnerWith(base, {
      escalation: [
        { after: 1, client: medium, name: "medium" },
        { after: 2, client: large, name: "large" },
      ],
    });
    const output = await outputOf(runner, workflow, "TP1?");
    expect(output.status).toBe("done");
    for (const client of [base, medium, large]) client.assertDone();
    expect(output.escalation?.servedBy).toEqual(["base", "medium", "large", "base", "base"]);
    expect(
      output.escalation?.switches.map((change) => `${change.from}→${change.to}:${change.reason}`),
    ).toEqual(["base→medium:retries", "medium→large:retries", "large→base:recovered"]);
  });

  it("is recorded in the run's checkpoints, so a resumed run goes on counting", async () => {
    const { workflow } = flightWorkflow();
    const snapshots: Snapshot<unknown>[] = [];
    const base = new ScriptedClient([text(prose), text(prose), toolCall("get_gate_info", { flight: "TP1" })]);
    const strong = new ScriptedClient([toolCall("get_flight_status", { flight: "TP1" })]);
    const runner = runnerWith(base, { escalation: { after: 2, client: strong } });
    const failed = await rejectionOf(
      runner.run(workflow, "TP1?", {
        checkpoint: (snapshot) => void snapshots.push(JSON.parse(JSON.stringify(snapshot))),
      }),
    );
    expect(failed.message).toContain("Unexpected call #4");
    const last = snapshots.at(-1) as unknown as { context: { escalation: EscalationRecord } };
    // The last checkpoint is taken before the fifth call (the base script has no fourth answer).
    expect(last.context.escalation.servedBy).toEqual(["base", "base", "escalation-1", "base", "base"]);
    const again = new ScriptedClient([toolCall("notify_passenger", { flight: "TP1" })]);
    const resumed = runnerWith(again, { escalation: { after: 2, client: new ScriptedClient([]) } });
    await expect(resumed.resume(workflow, last as unknown as Snapshot<unknown>)).resolves.toEqual({
      tool: "notify_passenger",
      flight: "TP1",
    });
  });

  it("rejects tiers out of order, without a client, or with a taken name", () => {
    const client = new ScriptedClient([]);
    const make = (escalation: WorkflowRunnerOptions["escalation"]) => () =>
      runnerWith(client, { escalation });
    expect(make({ after: 0, client })).toThrow(/escalation tier 1: after must be an integer ≥ 1/);
    expect(
      make([
        { after: 2, client },
        { after: 2, client },
      ]),
    ).toThrow(/tier 2: after must be an integer ≥ 3/);
    expect(make({ after: 1, client: {} as LLMClient })).toThrow(/client must be an LLMClient/);
    expect(make({ after: 1, client, name: "base" })).toThrow(/name 'base' is taken/);
    expect(make([])).toThrow(/at least one tier/);
  });
});
