import { describe, expect, it } from "vitest";
import { createActor, toPromise } from "xstate";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import type { WorkflowOutput, WorkflowSnapshot } from "../../src/machines/workflow.machine.ts";
import { ScriptedClient, text, toolCall } from "../../src/testing/index.ts";
import { createPassthrough, weatherWorkflow } from "../helpers/workflows.ts";

const script = () => [
  toolCall("report_weather", { city: "Paris", weather: "?" }),
  text("hmm, let me think"),
  toolCall("get_weather", { city: "Paris" }, "Paris first."),
  toolCall("report_weather", { city: "Paris", weather: "sunny" }),
];

async function uninterrupted() {
  const { workflow } = weatherWorkflow();
  const runner = new WorkflowRunner({
    client: new ScriptedClient(script()),
    contextManager: createPassthrough(),
  });
  const actor = createActor(runner.machineFor(workflow), {
    input: runner.inputFor(workflow, "Weather?", { promptVars: { user: "Ada" }, runId: "fixed" }),
  });
  actor.start();
  return (await toPromise(actor)) as WorkflowOutput;
}

/** The request of the inference worker's call in flight, in a persisted workflow snapshot. */
function inferenceRequestOf(stored: unknown): Record<string, unknown> {
  const children = (
    stored as { children: Record<string, { snapshot: { pending: { request: unknown } | null } }> }
  ).children;
  const request = children.inference?.snapshot.pending?.request;
  expect(request).toBeDefined();
  return request as Record<string, unknown>;
}

describe("persisted snapshots", () => {
  it.each([1, 2, 3, 4])(
    "persist at iteration %i → JSON round trip → restore → finish with identical history",
    async (stopAt) => {
      const expected = await uninterrupted();
      expect(expected.status).toBe("done");
      expect(expected.iteration).toBe(4);

      const { workflow } = weatherWorkflow();
      const first = new WorkflowRunner({
        client: new ScriptedClient(script()),
        contextManager: createPassthrough(),
      });
      const actor = createActor(first.machineFor(workflow), {
        input: first.inputFor(workflow, "Weather?", { promptVars: { user: "Ada" }, runId: "fixed" }),
      });
      const persisted = new Promise<unknown>((resolve) => {
        actor.subscribe((snapshot: WorkflowSnapshot) => {
          if (snapshot.value === "infer" && snapshot.context.iteration === stopAt) {
            resolve(JSON.parse(JSON.stringify(actor.getPersistedSnapshot())));
            actor.stop();
          }
        });
      });
      actor.start();
      const stored = await persisted;
      // The call in flight is stored without the history: the snapshot holds the history once.
      expect(JSON.stringify(stored).split('"content":"Weather?"')).toHaveLength(2);
      expect(inferenceRequestOf(stored)).not.toHaveProperty("messages");

      // The in-flight LLM call of the stored iteration is re-sent after restoring.
      const remaining = new ScriptedClient(script().slice(stopAt - 1));
      const second = new WorkflowRunner({ client: remaining, contextManager: createPassthrough() });
      const restored = createActor(second.machineFor(workflow), {
        snapshot: stored as WorkflowSnapshot,
      } as never);
      restored.start();
      const output = (await toPromise(restored)) as WorkflowOutput;
      remaining.assertDone();
      expect(output.status).toBe("done");
      expect(output.result).toEqual(expected.result);
      expect(output.messages).toEqual(expected.messages);
      expect(output.iteration).toBe(expected.iteration);
    },
  );

  it("restores a snapshot whose call in flight holds its history (as written before it was left out)", async () => {
    const expected = await uninterrupted();
    const { workflow } = weatherWorkflow();
    const first = new WorkflowRunner({
      client: new ScriptedClient(script()),
      contextManager: createPassthrough(),
    });
    const actor = createActor(first.machineFor(workflow), {
      input: first.inputFor(workflow, "Weather?", { promptVars: { user: "Ada" }, runId: "fixed" }),
    });
    const persisted = new Promise<{ context: { messages: unknown[] } }>((resolve) => {
      actor.subscribe((snapshot: WorkflowSnapshot) => {
        if (snapshot.value === "infer" && snapshot.context.iteration === 3) {
          resolve(JSON.parse(JSON.stringify(actor.getPersistedSnapshot())));
          actor.stop();
        }
      });
    });
    actor.start();
    const stored = await persisted;
    const request = inferenceRequestOf(stored);
    request.messages = stored.context.messages;
    const remaining = new ScriptedClient(script().slice(2));
    const second = new WorkflowRunner({ client: remaining, contextManager: createPassthrough() });
    const restored = createActor(second.machineFor(workflow), { snapshot: stored as never } as never);
    restored.start();
    const output = (await toPromise(restored)) as WorkflowOutput;
    remaining.assertDone();
    expect(output.messages).toEqual(expected.messages);
  });

  it("WorkflowRunner.resume finishes a stored run and resolves with the terminal result", async () => {
    const { workflow } = weatherWorkflow();
    const first = new WorkflowRunner({
      client: new ScriptedClient(script()),
      contextManager: createPassthrough(),
    });
    const actor = createActor(first.machineFor(workflow), {
      input: first.inputFor(workflow, "Weather?", { promptVars: { user: "Ada" } }),
    });
    const persisted = new Promise<unknown>((resolve) => {
      actor.subscribe((snapshot: WorkflowSnapshot) => {
        if (snapshot.value === "execute" && snapshot.context.iteration === 3) {
          resolve(JSON.parse(JSON.stringify(actor.getPersistedSnapshot())));
          actor.stop();
        }
      });
    });
    actor.start();
    const stored = await persisted;
    const client = new ScriptedClient(script().slice(3));
    const runner = new WorkflowRunner({ client, contextManager: createPassthrough() });
    await expect(runner.resume(workflow, stored as WorkflowSnapshot)).resolves.toEqual({
      reported: "Paris: sunny",
    });
    client.assertDone();
  });

  it("the context holds only JSON data", async () => {
    const output = await uninterrupted();
    expect(JSON.parse(JSON.stringify(output))).toEqual(output);
  });
});
