/**
 * Where a run stops to wait for a person: the runner's actor settles with its output, or parks in
 * `awaitingApproval` (docs/decisions/017), and a resumed run's decisions are checked first.
 */
import type { Snapshot } from "xstate";
import {
  type ApprovalDecision,
  type ApprovalState,
  decideApprovals,
  isFullyDecided,
} from "../core/approval.ts";
import { ApprovalNotPendingError, ApprovalRunClosedError } from "../core/errors.ts";
import type { WorkflowActor, WorkflowOutput } from "../machines/workflow.machine.ts";
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
 * or parks in `awaitingApproval` with calls undecided. A parked actor's persisted snapshot is
 * handed to `checkpoint` (reason `awaiting_approval`), then the actor is stopped: nothing of the run
 * stays in this process. An error the actor fails with rejects.
 */
export function settleOrPark(
  actor: WorkflowActor,
  decisions: readonly ApprovalDecision[],
  checkpoint: CheckpointHook | undefined,
): Promise<AttemptEnd> {
  return new Promise<AttemptEnd>((resolve, reject) => {
    let ready = false;
    let parking = false;
    const park = (snapshot: ReturnType<WorkflowActor["getSnapshot"]>) => {
      const { approval } = snapshot.context;
      if (!ready || parking || snapshot.status !== "active") return;
      if (snapshot.value !== "awaitingApproval" || !approval || isFullyDecided(approval)) return;
      parking = true;
      subscription.unsubscribe();
      const persisted = actor.getPersistedSnapshot();
      const { runId, iteration } = snapshot.context;
      // Stopped first: nothing of the run goes on in this process while the snapshot is stored.
      actor.stop();
      Promise.resolve(checkpoint?.(persisted, { reason: "awaiting_approval", runId, iteration })).then(
        () => resolve({ kind: "parked", runId, approval, snapshot: persisted }),
        reject,
      );
    };
    const subscription = actor.subscribe({
      next: park,
      complete: () => {
        if (!parking) resolve({ kind: "output", output: actor.getSnapshot().output as WorkflowOutput });
      },
      error: reject,
    });
    actor.start();
    if (decisions.length > 0) actor.send({ type: "approval.decide", decisions: [...decisions] });
    ready = true;
    park(actor.getSnapshot());
  });
}
