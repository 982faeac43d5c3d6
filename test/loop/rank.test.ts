/**
 * One priority sense (ADR 016) at the loop's entry points: a run's `rank` reaches each of its LLM
 * calls (`SendOptions.rank`), `priority` alone is read as its deprecated alias, and the two with
 * different values are a `RankConflictError` before any call: `run` and `resume` (`RunOptions`),
 * `machineFor` (`WorkflowHooks`) and `createWorkflowMachine` (`WorkflowMachineDeps`).
 */
import { describe, expect, it } from "vitest";
import { createActor, type Snapshot, toPromise } from "xstate";
import { RankConflictError } from "../../src/core/errors.ts";
import type { LLMResponse, SendOptions } from "../../src/core/types.ts";
import { workflowToolSpecs } from "../../src/core/workflow.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { createWorkflowMachine, type WorkflowOutput } from "../../src/machines/workflow.machine.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import { createPassthrough, rejectionOf, scriptedRunner, weatherWorkflow } from "../helpers/workflows.ts";

const vars = { promptVars: { user: "Ada" } };
const happy = () => [
  toolCall("get_weather", { city: "Paris" }),
  toolCall("report_weather", { city: "Paris", weather: "sunny" }),
];

/** A scripted client that also records the rank fields (`rank`, `priority`) each call was sent. */
class RankRecordingClient extends ScriptedClient {
  readonly sent: Record<string, unknown>[] = [];

  override send(
    messages: Record<string, unknown>[],
    tools?: Parameters<ScriptedClient["send"]>[1],
    options: SendOptions = {},
  ): Promise<LLMResponse> {
    this.sent.push(
      Object.fromEntries(Object.entries(options).filter(([key]) => key === "rank" || key === "priority")),
    );
    return super.send(messages, tools, options);
  }
}

/** A runner over a RankRecordingClient playing `script` (scriptedRunner's own client goes unused). */
function setup(script = happy()) {
  const client = new RankRecordingClient(script);
  const { runner, messages } = scriptedRunner([], { client });
  return { client, runner, messages, workflow: weatherWorkflow().workflow };
}

/** A persisted snapshot of a weather run, taken before its second (last) LLM call. */
async function snapshotBeforeLastCall(): Promise<Snapshot<unknown>> {
  const { runner, workflow } = setup();
  const snapshots: Snapshot<unknown>[] = [];
  await runner.run(workflow, "Weather?", {
    ...vars,
    checkpoint: (snapshot, meta) => {
      if (meta.reason === "inference") snapshots.push(JSON.parse(JSON.stringify(snapshot)));
    },
  });
  const last = snapshots.at(-1);
  if (!last) throw new Error("the run saved no checkpoint before a call");
  return last;
}

describe("WorkflowRunner.run (RunOptions)", () => {
  it("sends every call the run's rank", async () => {
    const { client, runner, workflow } = setup();
    await runner.run(workflow, "Weather?", { ...vars, rank: 3 });
    expect(client.sent).toEqual([{ rank: 3 }, { rank: 3 }]);
  });

  it("reads priority alone as rank (its deprecated alias), and sends rank", async () => {
    const { client, runner, workflow } = setup();
    await runner.run(workflow, "Weather?", { ...vars, priority: 3 });
    expect(client.sent).toEqual([{ rank: 3 }, { rank: 3 }]);
  });

  it("sends no rank when given none", async () => {
    const { client, runner, workflow } = setup();
    await runner.run(workflow, "Weather?", vars);
    expect(client.sent).toEqual([{}, {}]);
  });

  it("rejects rank and priority that differ with RankConflictError, before anything runs", async () => {
    const { client, runner, workflow, messages } = setup([]);
    const error = await rejectionOf(runner.run(workflow, "Weather?", { ...vars, rank: 0, priority: 2 }));
    expect(error).toBeInstanceOf(RankConflictError);
    expect(error).toMatchObject({ rank: 0, priority: 2 });
    expect(error.message).toBe(
      "WorkflowRunner.run: rank 0 and priority 2 disagree. Keep rank (lower is served first) and drop priority, its deprecated alias.",
    );
    expect(client.calls).toHaveLength(0);
    expect(messages).toHaveLength(0);
  });

  it("accepts rank and priority that agree", async () => {
    const { client, runner, workflow } = setup();
    await runner.run(workflow, "Weather?", { ...vars, rank: 1, priority: 1 });
    expect(client.sent).toEqual([{ rank: 1 }, { rank: 1 }]);
  });
});

describe("WorkflowRunner.resume (ResumeOptions)", () => {
  it("reads priority alone as the resumed run's rank", async () => {
    const snapshot = await snapshotBeforeLastCall();
    const { client, runner, workflow } = setup([happy()[1] as LLMResponse]);
    await expect(runner.resume(workflow, snapshot, { priority: 2 })).resolves.toEqual({
      reported: "Paris: sunny",
    });
    expect(client.sent).toEqual([{ rank: 2 }]);
  });

  it("rejects rank and priority that differ with RankConflictError, before any call", async () => {
    const snapshot = await snapshotBeforeLastCall();
    const { client, runner, workflow } = setup([]);
    const error = await rejectionOf(runner.resume(workflow, snapshot, { rank: 2, priority: -1 }));
    expect(error).toBeInstanceOf(RankConflictError);
    expect(error.message).toMatch(/^WorkflowRunner\.resume: rank 2 and priority -1 disagree/);
    expect(client.calls).toHaveLength(0);
  });
});

describe("WorkflowRunner.machineFor (WorkflowHooks)", () => {
  it("reads priority alone as the spawned actors' rank", async () => {
    const { client, runner, workflow } = setup();
    const actor = createActor(runner.machineFor(workflow, { priority: 4 }), {
      input: runner.inputFor(workflow, "Weather?", vars),
    }).start();
    expect(((await toPromise(actor)) as WorkflowOutput).status).toBe("done");
    expect(client.sent).toEqual([{ rank: 4 }, { rank: 4 }]);
  });

  it("throws RankConflictError for rank and priority that differ", () => {
    const { runner, workflow } = setup([]);
    expect(() => runner.machineFor(workflow, { rank: 1, priority: 4 })).toThrow(
      new RankConflictError("WorkflowHooks", 1, 4),
    );
  });
});

describe("createWorkflowMachine (WorkflowMachineDeps)", () => {
  function deps(client: RankRecordingClient) {
    const { workflow } = weatherWorkflow();
    return {
      workflow,
      deps: {
        client,
        contextManager: createPassthrough(),
        toolSpecs: workflowToolSpecs(workflow),
        tools: workflow.tools,
      },
    };
  }

  it("reads priority alone as the calls' rank", async () => {
    const client = new RankRecordingClient(happy());
    const { workflow, deps: base } = deps(client);
    const runner = new WorkflowRunner({ client, contextManager: createPassthrough() });
    const actor = createActor(createWorkflowMachine({ ...base, priority: 5 }), {
      input: runner.inputFor(workflow, "Weather?", vars),
    }).start();
    expect(((await toPromise(actor)) as WorkflowOutput).status).toBe("done");
    expect(client.sent).toEqual([{ rank: 5 }, { rank: 5 }]);
  });

  it("throws RankConflictError for rank and priority that differ, when the machine is built", () => {
    const { deps: base } = deps(new RankRecordingClient([]));
    expect(() => createWorkflowMachine({ ...base, rank: 0, priority: 5 })).toThrow(RankConflictError);
    expect(() => createWorkflowMachine({ ...base, rank: 0, priority: 5 })).toThrow(
      "WorkflowMachineDeps: rank 0 and priority 5 disagree",
    );
  });

  it("fails the run (actor_error RankConflictError) before the first call when a lookup's deps conflict", async () => {
    const client = new RankRecordingClient([]);
    const { workflow, deps: base } = deps(client);
    const runner = new WorkflowRunner({ client, contextManager: createPassthrough() });
    const machine = createWorkflowMachine(() => ({ ...base, rank: 0, priority: 5 }));
    const actor = createActor(machine, { input: runner.inputFor(workflow, "Weather?", vars) }).start();
    const output = (await toPromise(actor)) as WorkflowOutput;
    expect(output.status).toBe("failed");
    expect(output.failure).toMatchObject({
      kind: "actor_error",
      source: "inference",
      name: "RankConflictError",
      details: { rank: 0, priority: 5 },
    });
    expect(client.calls).toHaveLength(0);
  });
});
