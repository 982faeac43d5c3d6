/**
 * Model-based tests: xstate/graph walks the workflow statechart (the model), and every path that
 * ends in a final state is replayed against a real actor whose inference and tool actors are
 * scripted from the path's events (the system under test). Both must agree state by state.
 */
import { describe, expect, it } from "vitest";
import { type AnyEventObject, createActor } from "xstate";
import { TestModel } from "xstate/graph";
import { type Message, MessageRole, MessageType } from "../../src/core/messages.ts";
import type { LLMResponse } from "../../src/core/types.ts";
import { fromRequests } from "../../src/machines/request-worker.ts";
import { createWorkflowMachine } from "../../src/machines/workflow.machine.ts";
import type { InferenceRequest, ToolExecutionRequest } from "../../src/machines/workflow-actors.ts";
import type { ToolOutcome, WorkflowContext } from "../../src/machines/workflow-context.ts";
import { createWorkflowConfig } from "../../src/machines/workflow-context.ts";
import { openCalls } from "../../src/machines/workflow-messages.ts";
import { ScriptedClient } from "../../src/testing/index.ts";
import { createPassthrough } from "../helpers/workflows.ts";

const config = createWorkflowConfig({
  toolNames: ["lookup", "finish"],
  requiredSteps: ["lookup"],
  terminalTools: ["finish"],
  maxIterations: 4,
  maxRetriesPerStep: 1,
  maxToolErrors: 0,
  maxPrematureAttempts: 1,
});
const input = {
  config,
  runId: "model",
  messages: [
    { role: MessageRole.SYSTEM, content: "s", metadata: { type: MessageType.SYSTEM_PROMPT } },
    { role: MessageRole.USER, content: "u", metadata: { type: MessageType.USER_INPUT } },
  ] satisfies Message[],
};

const responses: Record<string, LLMResponse> = {
  text: { content: "I think the answer is 42." },
  unknown: [{ tool: "search", args: {} }],
  lookup: [{ tool: "lookup", args: { id: 1 } }],
  finish: [{ tool: "finish", args: {} }],
};

function modelMachine() {
  return createWorkflowMachine({
    client: new ScriptedClient([]),
    contextManager: createPassthrough(),
    toolSpecs: [],
  });
}

function eventsFor(state: { value: unknown; context: WorkflowContext }): AnyEventObject[] {
  if (state.value === "infer") {
    return [
      ...Object.values(responses).map((output) => ({ type: "inference.done", output })),
      { type: "inference.error", error: new Error("connection reset") },
      { type: "workflow.cancel" },
    ];
  }
  if (state.value === "execute") {
    const calls = openCalls(state.context.messages);
    const outcome = (status: "ok" | "error"): ToolOutcome[] =>
      calls.map((call) => ({
        callId: call.callId,
        tool: call.name,
        args: call.args,
        status,
        content: status === "ok" ? `${call.name} ok` : "[ToolError] Error: boom",
        ...(status === "ok" ? { value: `${call.name} ok` } : { errorName: "Error", errorMessage: "boom" }),
      }));
    return [
      { type: "tools.done", output: outcome("ok") },
      { type: "tools.done", output: outcome("error") },
      { type: "workflow.cancel" },
    ];
  }
  return [];
}

const isFinal = (state: { status: string }) => state.status === "done";

function pairingHolds(messages: readonly Message[]): boolean {
  const calls = messages.flatMap((message) => message.toolCalls?.map((call) => call.callId) ?? []);
  const answers = messages.filter((message) => message.role === "tool").map((message) => message.toolCallId);
  return (
    calls.length === answers.length &&
    calls.every((id) => answers.filter((answer) => answer === id).length === 1)
  );
}

describe("workflow statechart, model-based", () => {
  // `createTestModel` refuses machines with invocations; the TestModel it wraps walks them fine,
  // with the request workers' answers supplied as `inference.*` / `tools.*` events.
  const model = new TestModel(modelMachine(), {
    events: eventsFor as never,
    serializeState: (state) =>
      JSON.stringify([state.value, (state as unknown as { context: WorkflowContext }).context]),
  });
  const paths = model.getShortestPaths({ input, toState: isFinal as never });

  it("reaches every final state", () => {
    const finals = new Set(paths.map((path) => JSON.stringify(path.state.value)));
    expect([...finals].sort()).toEqual(['"cancelled"', '"done"', '"failed"']);
    const failures = new Set(
      paths.map((path) => (path.state.context as WorkflowContext).failure?.kind).filter(Boolean),
    );
    expect([...failures].sort()).toEqual([
      "actor_error",
      "max_iterations",
      "retries_exhausted",
      "step_enforcement",
      "tool_execution",
    ]);
  });

  it.each(paths.map((path) => [path.description, path] as const))("%s", async (_, path) => {
    const steps = path.steps
      .map((step) => step.event as AnyEventObject)
      .filter((event) => event.type !== "xstate.init");
    const script = [...steps];
    const machine = modelMachine().provide({
      actors: {
        inference: fromRequests("inference", async (_request: InferenceRequest, signal) => {
          const event = script.shift();
          if (event?.type === "inference.done") return event.output;
          if (event?.type === "inference.error") throw event.error;
          queueMicrotask(() => actor.send({ type: "workflow.cancel" }));
          return new Promise<never>((_, reject) =>
            signal.addEventListener("abort", () => reject(signal.reason)),
          );
        }),
        executeTools: fromRequests("tools", async (_request: ToolExecutionRequest, signal) => {
          const event = script.shift();
          if (event?.type === "tools.done") return event.output;
          queueMicrotask(() => actor.send({ type: "workflow.cancel" }));
          return new Promise<never>((_, reject) =>
            signal.addEventListener("abort", () => reject(signal.reason)),
          );
        }),
      },
    });
    const visited: unknown[] = [];
    const actor = createActor(machine, { input });
    actor.subscribe((snapshot) => visited.push(snapshot.value));
    actor.start();
    await new Promise<void>((resolve) => {
      if (actor.getSnapshot().status === "done") resolve();
      actor.subscribe({ complete: resolve });
    });
    const expectedStates = path.steps.map((step) => step.state.value);
    expect(visited.filter((value, index) => value !== visited[index - 1])).toEqual(
      expectedStates.filter((value, index) => value !== expectedStates[index - 1]),
    );
    const context = actor.getSnapshot().context;
    expect(JSON.parse(JSON.stringify(context))).toEqual(JSON.parse(JSON.stringify(path.state.context)));
    expect(pairingHolds(context.messages)).toBe(true);
    expect(script).toHaveLength(0);
  });
});
