/**
 * Human approval as data: the calls of a batch that wait for a person, the decisions taken on
 * them, and the pure rules every place that decides shares (the runner, the run queues, the CLI).
 * See docs/decisions/017-human-approval.md.
 */
import { z } from "zod";
import { ApprovalAlreadyDecidedError, ApprovalNotPendingError } from "./errors.ts";

/** A call that waits for a person: which tool, with which arguments, in which run. JSON. */
export interface PendingApproval {
  runId: string;
  callId: string;
  tool: string;
  args: Record<string, unknown>;
}

/** A person's decision on one pending call. JSON. */
export interface ApprovalDecision {
  callId: string;
  approved: boolean;
  /** Why it was denied: the model reads it as the call's tool result. */
  reason?: string;
}

/** Where a run's approval stands: its pending calls and the decisions taken so far. JSON. */
export interface ApprovalState {
  pending: PendingApproval[];
  decisions: ApprovalDecision[];
}

/** A decision as it enters from outside (a CLI, a request body, a queue's store): checked. */
export const approvalDecisionSchema = z.strictObject({
  callId: z.string().min(1),
  approved: z.boolean(),
  reason: z.string().optional(),
});

/** An approval state as stored (a queue record, a snapshot's context). */
export const approvalStateSchema = z.looseObject({
  pending: z.array(
    z.looseObject({
      runId: z.string(),
      callId: z.string(),
      tool: z.string(),
      args: z.record(z.string(), z.unknown()),
    }),
  ),
  decisions: z.array(approvalDecisionSchema),
});

/**
 * The one place an approval request is made: the calls of a batch that need a person, in batch
 * order. An observer of approval requests hooks in here.
 */
export function createApprovalRequest(
  runId: string,
  calls: readonly { callId: string; name: string; args: Record<string, unknown> }[],
  needsApproval: readonly boolean[],
): ApprovalState {
  const pending = calls
    .filter((_, index) => needsApproval[index] === true)
    .map((call) => ({ runId, callId: call.callId, tool: call.name, args: call.args }));
  return { pending, decisions: [] };
}

/**
 * `state` with `decisions` added, checked: each names a pending call (`ApprovalNotPendingError`)
 * not decided before, here or earlier in the list (`ApprovalAlreadyDecidedError`). Nothing is
 * kept when one is refused.
 */
export function decideApprovals(state: ApprovalState, decisions: readonly ApprovalDecision[]): ApprovalState {
  const pendingIds = state.pending.map((call) => call.callId);
  const decided = new Map(state.decisions.map((decision) => [decision.callId, decision]));
  for (const raw of decisions) {
    const decision = approvalDecisionSchema.parse(raw);
    if (!pendingIds.includes(decision.callId)) throw new ApprovalNotPendingError(decision.callId, pendingIds);
    const earlier = decided.get(decision.callId);
    if (earlier) {
      throw new ApprovalAlreadyDecidedError(decision.callId, earlier.approved ? "approved" : "denied");
    }
    decided.set(decision.callId, decision);
  }
  return { pending: state.pending, decisions: [...decided.values()] };
}

/** The pending calls no decision was taken on yet. */
export function undecidedCalls(state: ApprovalState): PendingApproval[] {
  const decided = new Set(state.decisions.map((decision) => decision.callId));
  return state.pending.filter((call) => !decided.has(call.callId));
}

/** True once every pending call is decided: the run may go on. */
export function isFullyDecided(state: ApprovalState): boolean {
  return undecidedCalls(state).length === 0;
}

/**
 * The decisions one approve / deny asks for: on `callId` alone, or on every call still undecided
 * when none is named.
 */
export function decisionsFor(
  state: ApprovalState,
  approved: boolean,
  options: { callId?: string; reason?: string } = {},
): ApprovalDecision[] {
  const callIds = options.callId ? [options.callId] : undecidedCalls(state).map((call) => call.callId);
  return callIds.map((callId) => ({
    callId,
    approved,
    ...(options.reason !== undefined && { reason: options.reason }),
  }));
}

/** What the model reads for a denied call, on the tool channel. */
export function deniedCallContent(toolName: string, reason: string | undefined): string {
  const why = reason?.trim() ? ` Reason: ${reason.trim()}` : "";
  return `[ApprovalDenied] A person denied this call to '${toolName}'; it was not run.${why}`;
}
