/**
 * One `tools/call` of a served workflow: run it with the request's abort signal, report each tool
 * call as progress, ask the person through elicitation when a step needs approval, and answer with
 * the result or the typed error.
 */
import type { ApprovalDecision, PendingApproval } from "../../core/approval.ts";
import { AwaitingApprovalError } from "../../core/errors.ts";
import type { RunObserver } from "../../core/run-observer.ts";
import type { Workflow } from "../../core/workflow.ts";
import type { WorkflowRunner } from "../../loop/runner.ts";
import { McpApprovalRequiredError } from "./errors.ts";
import { errorResult, resultOfRun, type WorkflowToolArgs, type WorkflowToolResult } from "./workflow-tool.ts";

/** What a person answered to one pending call: a decision, or dismissed (the run stops). */
export type ApprovalAnswer = ApprovalDecision | "dismissed";

/** What a call needs from its MCP request. */
export interface WorkflowCall {
  workflow: Workflow;
  args: WorkflowToolArgs;
  runner: WorkflowRunner;
  runId: string;
  /** Aborted when the client cancels the request (`notifications/cancelled`) or the connection closes. */
  signal: AbortSignal;
  /** Sends one progress notification (only when the client sent a progressToken). */
  progress?: (progress: number, message: string) => Promise<void>;
  /** Asks the person about one pending call; absent when the client cannot be asked (no elicitation). */
  askApproval?: (call: PendingApproval) => Promise<ApprovalAnswer>;
  /** Observers of the run, after the progress reporter. */
  observers?: readonly RunObserver[];
}

/** Runs the call to its answer; never throws (a failure is an `isError` result). */
export async function callWorkflow(call: WorkflowCall): Promise<WorkflowToolResult> {
  const sent: Promise<void>[] = [];
  const result = await runCall(call, sent);
  // The terminal step's observer hooks may land just after the run resolves: let them in, then
  // send every progress notification before the answer (a client drops progress after the result).
  await new Promise((resolve) => setImmediate(resolve));
  await Promise.all(sent);
  // The SDK's client runs a progress handler a microtask after reading the notification, but
  // forgets the call's progress handler as soon as it reads the answer: a notification read in the
  // same chunk as the answer is dropped. A short pause lets the last one leave on its own.
  if (sent.length > 0) await new Promise((resolve) => setTimeout(resolve, PROGRESS_FLUSH_MS));
  return result;
}

/** How long the answer waits after the last progress notification (see `callWorkflow`). */
const PROGRESS_FLUSH_MS = 20;

async function runCall(call: WorkflowCall, sent: Promise<void>[]): Promise<WorkflowToolResult> {
  const { workflow, runner, signal, args } = call;
  let steps = 0;
  // Awaited before the answer goes out: a client drops progress that arrives after the result.
  const progress: RunObserver = {
    onToolResult: ({ tool, status }) => {
      steps += 1;
      if (call.progress) sent.push(call.progress(steps, `${tool}: ${status}`).catch(() => {}));
    },
  };
  const observers = [progress, ...(call.observers ?? [])];
  let attempt = () =>
    runner.run(workflow, args.message, {
      runId: call.runId,
      signal,
      observers,
      ...(args.promptVars && { promptVars: args.promptVars }),
    });
  for (;;) {
    try {
      return resultOfRun(await attempt());
    } catch (error) {
      if (!(error instanceof AwaitingApprovalError) || signal.aborted) return errorResult(error);
      // An elicitation that failed (timed out, the client went away) answers as that error.
      const decided = await decide(error, call.askApproval).catch((failure: unknown) => failure);
      if (decided instanceof McpApprovalRequiredError) {
        return errorResult(decided, { runId: decided.runId, pending: decided.pending });
      }
      if (!Array.isArray(decided)) return errorResult(decided);
      const parked = error;
      attempt = () =>
        runner.resume(workflow, parked.snapshot, {
          meta: parked.meta,
          decisions: decided,
          signal,
          observers,
        });
    }
  }
}

/** The person's decisions on every pending call, or the error to answer with. */
async function decide(
  parked: AwaitingApprovalError,
  askApproval: WorkflowCall["askApproval"],
): Promise<ApprovalDecision[] | McpApprovalRequiredError> {
  const pending = parked.pending.map(({ callId, tool, args }) => ({ callId, tool, args }));
  if (!askApproval) {
    return new McpApprovalRequiredError(
      parked.runId,
      pending,
      "this MCP client declared no elicitation, so it cannot be asked",
    );
  }
  const decisions: ApprovalDecision[] = [];
  for (const call of parked.pending) {
    const answer = await askApproval(call);
    if (answer === "dismissed") {
      return new McpApprovalRequiredError(parked.runId, pending, "the person dismissed the approval request");
    }
    decisions.push(answer);
  }
  return decisions;
}
