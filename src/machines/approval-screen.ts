/**
 * Before a batch runs: which of its calls wait for a person (their tools' `needsApproval`), and
 * the outcome of a call a person denied. Used by the tools worker; docs/decisions/017.
 */
import { type ApprovalState, createApprovalRequest, deniedCallContent } from "../core/approval.ts";
import type { Message, ToolCallInfo } from "../core/messages.ts";
import type { ToolDef } from "../core/tools.ts";
import type { ToolOutcome } from "./workflow-context.ts";

/**
 * The approval request of a batch: its calls whose tool's `needsApproval` says so (`true`, or a
 * function of the parsed arguments that returns true), or null when none does. A call whose
 * arguments do not fit its tool's schema waits for nobody: it fails as a ToolArgumentError. The
 * functions are asked in batch order, one at a time; one that throws rejects (the run fails).
 */
export async function screenBatch(
  tools: Readonly<Record<string, ToolDef>>,
  calls: readonly ToolCallInfo[],
  run: { runId: string; messages: readonly Message[] },
): Promise<ApprovalState | null> {
  const flags: boolean[] = [];
  for (const call of calls) flags.push(await needsApprovalOf(tools[call.name], call, run));
  if (!flags.includes(true)) return null;
  return createApprovalRequest(run.runId, calls, flags);
}

async function needsApprovalOf(
  tool: ToolDef | undefined,
  call: ToolCallInfo,
  run: { runId: string; messages: readonly Message[] },
): Promise<boolean> {
  const rule = tool?.needsApproval;
  if (rule === undefined || typeof rule === "boolean") return rule === true;
  const parsed = tool?.spec.parameters.safeParse(call.args);
  if (!parsed?.success) return false;
  const answer = await rule(parsed.data as Record<string, unknown>, {
    runId: run.runId,
    callId: call.callId,
    messages: run.messages,
  });
  return answer === true;
}

/** The outcome of a call a person denied: not run, the reason on the tool channel, no error counted. */
export function deniedOutcome(call: ToolCallInfo, reason: string | undefined): ToolOutcome {
  const content = deniedCallContent(call.name, reason);
  return {
    callId: call.callId,
    tool: call.name,
    args: call.args,
    // Like a resolution error: the step is not recorded and the model's error budget is untouched.
    status: "resolution_error",
    content,
    errorName: "ApprovalDenied",
    errorMessage: content,
  };
}
