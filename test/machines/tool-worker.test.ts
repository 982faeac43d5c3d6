/**
 * The tools worker reads nothing of its parent's context: a parent that is no workflow (its
 * context holds none of a workflow's fields) gets a batch run from the request alone, with the
 * request's run id in each call's context, the answered calls in their places (never run) and the
 * earlier starts counted in each attempt; it answers `tools.done` with the outcomes.
 */
import { describe, expect, it } from "vitest";
import { assign, createActor, sendTo, setup, toPromise } from "xstate";
import { z } from "zod";
import { defineTool, type ToolCallContext } from "../../src/core/tools.ts";
import { createToolExecutionLogic, type ToolExecutionRequest } from "../../src/machines/workflow-actors.ts";
import type { ToolOutcome } from "../../src/machines/workflow-context.ts";

function echoTool(seen: Omit<ToolCallContext, "signal">[]) {
  return defineTool({
    name: "echo",
    description: "Echo",
    parameters: z.object({ text: z.string() }),
    execute: ({ text }, { signal: _signal, ...context }) => {
      seen.push(context);
      return text;
    },
  });
}

/** A parent with a context of its own that sends one request and finishes with the answer. */
function parentOf(request: ToolExecutionRequest, seen: Omit<ToolCallContext, "signal">[]) {
  return setup({
    types: {
      context: {} as { unrelated: true; outcomes: ToolOutcome[] | null },
      events: {} as { type: "tools.done"; output: ToolOutcome[] } | { type: "tools.error"; error: unknown },
    },
    actors: { tools: createToolExecutionLogic({ tools: { echo: echoTool(seen) } }) },
  }).createMachine({
    context: { unrelated: true, outcomes: null },
    invoke: { id: "tools", src: "tools" },
    entry: sendTo("tools", { type: "request" as const, request }),
    initial: "waiting",
    states: {
      waiting: {
        on: { "tools.done": { target: "done", actions: assign({ outcomes: ({ event }) => event.output }) } },
      },
      done: { type: "final" },
    },
    output: ({ context }) => context.outcomes,
  });
}

describe("the tools worker", () => {
  it("runs a batch from its request alone, answering the answered calls in place", async () => {
    const seen: Omit<ToolCallContext, "signal">[] = [];
    const denied: ToolOutcome = {
      callId: "c2",
      tool: "echo",
      args: { text: "two" },
      status: "denied",
      content: "[ApprovalDenied] no",
      errorName: "ApprovalDenied",
      errorMessage: "[ApprovalDenied] no",
    };
    const request: ToolExecutionRequest = {
      calls: [
        { name: "echo", args: { text: "one" }, callId: "c1" },
        { name: "echo", args: { text: "two" }, callId: "c2" },
        { name: "echo", args: { text: "three" }, callId: "c3" },
      ],
      runId: "run-9",
      answered: [denied],
      started: { c3: 1 },
    };
    const actor = createActor(parentOf(request, seen));
    actor.start();
    const outcomes = (await toPromise(actor)) as ToolOutcome[] | null;
    expect(outcomes?.map((outcome) => [outcome.callId, outcome.status, outcome.content])).toEqual([
      ["c1", "ok", "one"],
      ["c2", "denied", "[ApprovalDenied] no"],
      ["c3", "ok", "three"],
    ]);
    expect(seen).toEqual([
      { runId: "run-9", callId: "c1", idempotencyKey: "run-9:c1", attempt: 1, resumed: false },
      { runId: "run-9", callId: "c3", idempotencyKey: "run-9:c3", attempt: 2, resumed: true },
    ]);
  });
});
