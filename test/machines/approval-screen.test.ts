/**
 * The approval step's pure decisions: which batches are screened, the denied calls' outcomes, and
 * the tools worker's request built from the workflow's context (denied calls answered, finished
 * ones kept, nothing twice).
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { ApprovalState } from "../../src/core/approval.ts";
import { createMessage, MessageRole, MessageType } from "../../src/core/messages.ts";
import { defineTool } from "../../src/core/tools.ts";
import { deniedOutcomes, mayNeedApproval } from "../../src/machines/approval-screen.ts";
import {
  createWorkflowConfig,
  createWorkflowContext,
  type ToolOutcome,
  type WorkflowContext,
} from "../../src/machines/workflow-context.ts";
import { noteScreening, toolRequest } from "../../src/machines/workflow-updates.ts";

const tool = (name: string, needsApproval?: boolean | (() => boolean)) =>
  defineTool({
    name,
    description: name,
    parameters: z.object({}),
    ...(needsApproval !== undefined && { needsApproval }),
    execute: () => null,
  });
const tools = {
  free: tool("free"),
  never: tool("never", false),
  always: tool("always", true),
  asks: tool("asks", () => false),
};

const approval: ApprovalState = {
  pending: [
    { runId: "r", callId: "c2", tool: "always", args: { n: 2 } },
    { runId: "r", callId: "c3", tool: "asks", args: { n: 3 } },
  ],
  decisions: [
    { callId: "c3", approved: false, reason: "no" },
    { callId: "c2", approved: true },
  ],
};

/** A context whose last message is a TOOL_CALL of c1 (free), c2 (always), c3 (asks). */
function batchContext(extra: Partial<WorkflowContext> = {}): WorkflowContext {
  const call = createMessage(
    MessageRole.ASSISTANT,
    "",
    { type: MessageType.TOOL_CALL },
    {
      toolCalls: [
        { name: "free", args: { n: 1 }, callId: "c1" },
        { name: "always", args: { n: 2 }, callId: "c2" },
        { name: "asks", args: { n: 3 }, callId: "c3" },
      ],
    },
  );
  const context = createWorkflowContext({
    config: createWorkflowConfig({ toolNames: Object.keys(tools), toolTimeoutMs: 500, toolConcurrency: 2 }),
    messages: [call],
    runId: "r",
  });
  return { ...context, iteration: 3, ...extra };
}

describe("mayNeedApproval", () => {
  it("is true when a tool of the batch declares needsApproval (true or a function), not for false or none", () => {
    expect(mayNeedApproval(["free", "never"], tools)).toBe(false);
    expect(mayNeedApproval(["free", "always"], tools)).toBe(true);
    expect(mayNeedApproval(["asks"], tools)).toBe(true);
    expect(mayNeedApproval(["unknown"], tools)).toBe(false);
    expect(mayNeedApproval(["always"], undefined)).toBe(false);
  });
});

describe("deniedOutcomes", () => {
  it("answers each denied call with status denied and the reason, in batch order; none without approval", () => {
    expect(deniedOutcomes(approval)).toEqual([
      {
        callId: "c3",
        tool: "asks",
        args: { n: 3 },
        status: "denied",
        content: "[ApprovalDenied] A person denied this call to 'asks'; it was not run. Reason: no",
        errorName: "ApprovalDenied",
        errorMessage: "[ApprovalDenied] A person denied this call to 'asks'; it was not run. Reason: no",
      },
    ]);
    expect(deniedOutcomes(null)).toEqual([]);
    expect(deniedOutcomes(undefined)).toEqual([]);
  });
});

describe("toolRequest", () => {
  it("gives the worker the open calls and the run's id, iteration, concurrency and timeout", () => {
    expect(toolRequest(batchContext())).toEqual({
      calls: [
        { name: "free", args: { n: 1 }, callId: "c1" },
        { name: "always", args: { n: 2 }, callId: "c2" },
        { name: "asks", args: { n: 3 }, callId: "c3" },
      ],
      runId: "r",
      iteration: 3,
      concurrency: 2,
      timeoutMs: 500,
    });
  });

  it("answers the denied calls and keeps the finished ones and the starts, each call once", () => {
    const finished: ToolOutcome = {
      callId: "c1",
      tool: "free",
      args: { n: 1 },
      status: "ok",
      content: "null",
    };
    const keptDenial = { ...(deniedOutcomes(approval)[0] as ToolOutcome), content: "kept" };
    const request = toolRequest(batchContext({ approval, outcomes: [finished], started: { c2: 1 } }));
    expect(request.answered?.map((outcome) => [outcome.callId, outcome.status])).toEqual([
      ["c1", "ok"],
      ["c3", "denied"],
    ]);
    expect(request.started).toEqual({ c2: 1 });
    const again = toolRequest(batchContext({ approval, outcomes: [keptDenial] }));
    expect(again.answered).toEqual([keptDenial]);
  });
});

describe("noteScreening", () => {
  const accepted = (names: string[]): Partial<WorkflowContext> => ({
    decision: { kind: "execute", calls: names.map((name) => ({ tool: name, args: {} })) },
  });

  it("marks a batch with an approval tool, and leaves the context alone until a run has one", () => {
    expect(noteScreening(batchContext(accepted(["free"])), tools)).toEqual({});
    expect(noteScreening(batchContext(accepted(["free", "always"])), tools)).toEqual({
      needsScreening: true,
    });
    expect(noteScreening(batchContext({ ...accepted(["free"]), needsScreening: true }), tools)).toEqual({
      needsScreening: false,
    });
  });
});
