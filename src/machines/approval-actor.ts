/**
 * The workflow machine's approval screen: invoked by the `approve` state for a batch whose tools
 * declare `needsApproval`, it asks them which calls wait for a person and answers with the
 * approval request, or null when none waits (docs/decisions/036). Nothing of the batch runs here.
 */
import { fromPromise } from "xstate";
import type { ApprovalState } from "../core/approval.ts";
import type { ToolDef } from "../core/tools.ts";
import { type DepsSource, resolveDeps } from "./actor-deps.ts";
import { type ApprovalScreenRequest, screenBatch } from "./approval-screen.ts";

/** What the approval screen needs: the tools, for their `needsApproval`. */
export interface ApprovalScreenDeps {
  tools: Readonly<Record<string, ToolDef>>;
}

/**
 * A promise actor that screens one batch (its `input`): the approval request of the calls that
 * wait for a person, or null. A `needsApproval` function that throws rejects it.
 * @example
 * const screen = createActor(createApprovalScreenLogic({ tools }), { input: { runId, messages, calls } });
 */
export function createApprovalScreenLogic(source: DepsSource<ApprovalScreenDeps>) {
  return fromPromise<ApprovalState | null, ApprovalScreenRequest>(async ({ input, self, signal }) => {
    const { tools } = resolveDeps(source, self._parent);
    const approval = await screenBatch(tools, input.calls, input);
    signal.throwIfAborted();
    return approval;
  });
}
