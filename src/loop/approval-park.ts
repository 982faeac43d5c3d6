/**
 * Where a run stops to wait for a person: the runner's actor settles with its output, or parks in
 * `awaitingApproval` (docs/decisions/017), and a resumed run's decisions are checked first.
 */
import { type Snapshot, waitFor } from "xstate";
import {
  type ApprovalDecision,
  type ApprovalState,
  decideApprovals,
  isFullyDecided,
} from "../core/approval.ts";
import { ApprovalNotPendingError, ApprovalRunClosedError } from "../core/errors.ts";
import type { WorkflowActor, WorkflowOutput, WorkflowSnapshot } from "../machines/workflow.machine.ts";
import type { CheckpointHook } from "../machines/workflow-actors.ts";
import type { WorkflowContext } from "../machines/workflow-context.ts";

/** How a started actor ended this attempt: its output, or parked waiting for approval. */
export type AttemptEnd =
  | { kind: "output"; output: WorkflowOutput }
  | { kind: "parked"; runId: string; approval: ApprovalState; snapshot: Snapshot<unknown> };

/**
 * Check decisions against a snapshot about to be resumed: it must wait for approval
 * (`ApprovalRunClosedError` for a run that is over, `ApprovalNotPendingError` for one that waits
 * for nothing) and each decision must name a pending, undecided call.
 */
export function assertDecisionsFit(
  snapshot: Snapshot<unknown>,
  decisions: readonly ApprovalDecision[],
): void {
  const { context, value, status } = snapshot as unknown as {
    context: WorkflowContext;
    value: unknown;
    status: string;
  };
  if (status !== "active" || context.status !== "running") {
    throw new ApprovalRunClosedError(context.runId, context.status === "running" ? status : context.status);
  }
  const waiting = value === "awaitingApproval" && context.approval ? context.approval : undefined;
  if (!waiting) {
    throw new ApprovalNotPendingError(decisions[0]?.callId ?? "(none)", []);
  }
  decideApprovals(waiting, decisions);
}

/**
 * Start `actor`, send it `decisions` (a resumed run's), and settle once it reaches a final state
 * or parks in `awaitingApproval` with calls undecided (XState's `waitFor`, asked after the
 * decisions are sent, so a restored parked snapshot is not taken for a new park). A parked actor's
 * persisted snapshot is handed to `checkpoint` (reason `awaiting_approval`), then the actor is
 * stopped: nothing of the run stays in this process. An error the actor fails with rejects.
 */
export async function settleOrPark(
  actor: WorkflowActor,
  decisions: readonly ApprovalDecision[],
  checkpoint: CheckpointHook | undefined,
): Promise<AttemptEnd> {
  // Heard from before the start: an actor that fails as it starts (a snapshot that does not
  // restore) would report its error as unhandled otherwise. `waitFor` finds it in the snapshot.
  const heard = actor.subscribe({ error: () => {} });
  let snapshot: WorkflowSnapshot;
  try {
    actor.start();
    if (decisions.length > 0) actor.send({ type: "approval.decide", decisions: [...decisions] });
    snapshot = await settled(actor);
  } finally {
    heard.unsubscribe();
  }
  if (snapshot.status === "error") throw snapshot.error;
  if (snapshot.status !== "active") return { kind: "output", output: snapshot.output as WorkflowOutput };
  const persisted = actor.getPersistedSnapshot();
  const { runId, iteration, approval } = snapshot.context;
  // Stopped first: nothing of the run goes on in this process while the snapshot is stored.
  actor.stop();
  await checkpoint?.(persisted, { reason: "awaiting_approval", runId, iteration });
  return { kind: "parked", runId, approval: approval as ApprovalState, snapshot: persisted };
}

/** The actor's snapshot once it is final, or parked with calls undecided. */
async function settled(actor: WorkflowActor): Promise<WorkflowSnapshot> {
  for (;;) {
    await waitFor(actor, isSettledOrParked);
    // Read again: `waitFor` resolves a tick later, and an event (a cancel) may have moved it on.
    const snapshot = actor.getSnapshot();
    if (isSettledOrParked(snapshot)) return snapshot;
  }
}

function isSettledOrParked(snapshot: WorkflowSnapshot): boolean {
  if (snapshot.status !== "active") return true;
  const { approval } = snapshot.context;
  return snapshot.value === "awaitingApproval" && approval != null && !isFullyDecided(approval);
}
