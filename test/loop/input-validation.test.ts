/** Histories, snapshots and checkpoint meta are checked with zod where they enter the loop. */
import { describe, expect, it } from "vitest";
import { InvalidMessageError, InvalidSnapshotError } from "../../src/core/errors.ts";
import type { Message } from "../../src/core/messages.ts";
import { workflowDefinitionHash } from "../../src/loop/checkpoint.ts";
import { runInference } from "../../src/loop/inference.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import { createPassthrough, rejectionOf, weatherWorkflow } from "../helpers/workflows.ts";

const script = () => [
  toolCall("get_weather", { city: "Paris" }),
  toolCall("report_weather", { city: "Paris", weather: "sunny" }),
];

/** A runner, and the first checkpoint of one of its runs (JSON, as a store keeps it). */
async function checkpointed() {
  const { workflow } = weatherWorkflow();
  const runner = new WorkflowRunner({
    client: new ScriptedClient(script()),
    contextManager: createPassthrough(),
  });
  let first: { snapshot: Record<string, unknown>; meta: Record<string, unknown> } | undefined;
  await runner.run(workflow, "x", {
    promptVars: { user: "Ada" },
    checkpoint: (snapshot, meta) => {
      first ??= JSON.parse(JSON.stringify({ snapshot, meta }));
    },
  });
  if (!first) throw new Error("no checkpoint");
  return { workflow, first };
}

describe("initialMessages", () => {
  it.each([
    [[{ role: "user", content: 42, metadata: { type: "user_input" } }], "initialMessages[0].content"],
    [[{ role: "user", content: "hi" }], "initialMessages[0].metadata"],
    [[{ role: "robot", content: "hi", metadata: { type: "user_input" } }], "initialMessages[0].role"],
    [[{ role: "user", content: "hi", metadata: { type: "shout" } }], "initialMessages[0].metadata.type"],
    ["hello", "initialMessages"],
  ])("%j is refused with InvalidMessageError naming %s, before any call", async (initialMessages, field) => {
    const { workflow } = weatherWorkflow();
    const client = new ScriptedClient(script());
    const runner = new WorkflowRunner({ client, contextManager: createPassthrough() });
    const error = await rejectionOf(
      runner.run(workflow, "x", { initialMessages: initialMessages as unknown as Message[] }),
    );
    expect(error).toBeInstanceOf(InvalidMessageError);
    expect(error.field).toBe(field);
    expect(error.message).toContain(field);
    expect(client.calls).toHaveLength(0);
  });

  it("runInference refuses a damaged history the same way", async () => {
    const client = new ScriptedClient([]);
    const error = await rejectionOf(
      runInference({
        client,
        contextManager: createPassthrough(),
        messages: [{ role: "user", metadata: { type: "user_input" } }] as unknown as Message[],
        tools: [],
      }),
    );
    expect(error).toBeInstanceOf(InvalidMessageError);
    expect(error.field).toBe("messages[0].content");
  });
});

describe("resume", () => {
  it("refuses a snapshot whose iteration is not a number, naming the field", async () => {
    const { workflow, first } = await checkpointed();
    (first.snapshot.context as Record<string, unknown>).iteration = "four";
    const client = new ScriptedClient(script());
    const runner = new WorkflowRunner({ client, contextManager: createPassthrough() });
    const error = await rejectionOf(
      runner.resume(workflow, first.snapshot as never, { meta: first.meta as never }),
    );
    expect(error).toBeInstanceOf(InvalidSnapshotError);
    expect(error.field).toBe("context.iteration");
    expect(error.message).toMatch(/context\.iteration: .*expected number/);
    expect(client.calls).toHaveLength(0);
  });

  it.each([
    [(snapshot: Record<string, unknown>) => delete snapshot.context, "context"],
    [(snapshot: Record<string, unknown>) => (snapshot.value = 3), "value"],
    [
      (snapshot: Record<string, unknown>) =>
        ((snapshot.context as { messages: unknown[] }).messages[1] = { role: "user" }),
      "context.messages[1].content",
    ],
  ])("refuses a damaged snapshot (%#), naming %s", async (damage, field) => {
    const { workflow, first } = await checkpointed();
    damage(first.snapshot);
    const runner = new WorkflowRunner({
      client: new ScriptedClient([]),
      contextManager: createPassthrough(),
    });
    const error = await rejectionOf(runner.resume(workflow, first.snapshot as never));
    expect(error).toBeInstanceOf(InvalidSnapshotError);
    expect(error.field).toBe(field);
  });

  it("refuses a snapshot that is not an object", async () => {
    const { workflow } = weatherWorkflow();
    const runner = new WorkflowRunner({
      client: new ScriptedClient([]),
      contextManager: createPassthrough(),
    });
    const error = await rejectionOf(runner.resume(workflow, "checkpoint" as never));
    expect(error).toBeInstanceOf(InvalidSnapshotError);
    expect(error.field).toBe("snapshot");
  });

  it("refuses checkpoint meta of the wrong shape, naming the field", async () => {
    const { workflow, first } = await checkpointed();
    const runner = new WorkflowRunner({
      client: new ScriptedClient([]),
      contextManager: createPassthrough(),
    });
    const meta = {
      workflow: "weather",
      definitionHash: workflowDefinitionHash(workflow),
      machineVersion: "3",
    };
    const error = await rejectionOf(
      runner.resume(workflow, first.snapshot as never, { meta: meta as never }),
    );
    expect(error).toBeInstanceOf(InvalidSnapshotError);
    expect(error.field).toBe("meta.machineVersion");
  });

  it("resumes an undamaged checkpoint", async () => {
    const { workflow, first } = await checkpointed();
    const runner = new WorkflowRunner({
      client: new ScriptedClient(script()),
      contextManager: createPassthrough(),
    });
    await expect(
      runner.resume(workflow, first.snapshot as never, { meta: first.meta as never }),
    ).resolves.toEqual({ reported: "Paris: sunny" });
  });
});
