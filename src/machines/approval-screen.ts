/**
 * The approval step's decisions (docs/decisions/017, 036): whether a batch goes through the
 * `approve` state at all, which of its calls wait for a person, and the outcomes of the calls a
 * person denied. No machine imports; the screen's actor is approval-actor.ts.
 */
import {
  type ApprovalState,
  createApprovalRequest,
  deniedCallContent,
  type PendingApproval,
} from "../core/approval.ts";
import type { Message, ToolCallInfo } from "../core/messages.ts";
import type { ToolDef } from "../core/tools.ts";
import type { ToolOutcome } from "./workflow-context.ts";

/** What the screen is given: the run, its history (for `needsApproval` functions) and the batch. */
export interface ApprovalScreenRequest {
  runId: string;
  messages: readonly Message[];
  calls: readonly ToolCallInfo[];
}

/**
 * True when some of a batch's tools (by name) declares `needsApproval` (`true` or a function):
 * only such a batch is screened. A tool with `needsApproval: false`, or none, never waits.
 */
export function mayNeedApproval(
  toolNames: readonly string[],
  tools: Readonly<Record<string, ToolDef>> | undefined,
): boolean {
  return toolNames.some((name) => {
    const rule = tools?.[name]?.needsApproval;
    return rule !== undefined && rule !== false;
  });
}

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

/**
 * The outcome of a call a person denied: not run, the reason on the tool channel, status
 * `denied` (like a resolution error, the step is not recorded and the model's error budget is
 * untouched: the model did nothing wrong).
 */
export function deniedOutcome(
  call: Pick<PendingApproval, "callId" | "tool" | "args">,
  reason?: string,
): ToolOutcome {
  const content = deniedCallContent(call.tool, reason);
  return {
    callId: call.callId,
    tool: call.tool,
    args: call.args,
    status: "denied",
    content,
    errorName: "ApprovalDenied",
    errorMessage: content,
  };
}

/** The outcomes of every call denied in `approval` (none when it is absent), in batch order. */
export function deniedOutcomes(approval: ApprovalState | null | undefined): ToolOutcome[] {
  if (!approval) return [];
  return approval.pending.flatMap((call) => {
    const decision = approval.decisions.find((taken) => taken.callId === call.callId);
    return decision && !decision.approved ? [deniedOutcome(call, decision.reason)] : [];
  });
}
