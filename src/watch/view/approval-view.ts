/**
 * What the run viewer shows of a run parked for a person's approval (docs/decisions/017): the
 * runner stops a parked run's actor in `awaitingApproval`, so a run whose last state is that one
 * waits, not cancelled. Pure: reads the record the server folds from the run's events.
 */
import type { ToolCallInfo } from "../../core/messages.ts";
import { escapeHtml } from "./format.ts";
import type { RunRecord } from "./run-record.ts";

/** The machine state a parked run stops in. */
const PARKED_STATE = "awaitingApproval";

/** The calls of the batch a parked run waits on (the last TOOL_CALL message), or null if it does not wait. */
export function parkedBatch(record: RunRecord): ToolCallInfo[] | null {
  if (record.currentState !== PARKED_STATE) return null;
  const batch = record.trace.messages.findLast((entry) => entry.message.metadata.type === "tool_call");
  return batch?.message.toolCalls ?? [];
}

/** The badge of a parked run, or null. */
export function parkedBadge(record: RunRecord): string | null {
  return parkedBatch(record) === null ? null : `<span class="badge live">awaiting approval</span>`;
}

/**
 * The batch a parked run waits on, each call with its id and arguments, and how to decide it;
 * null when the run does not wait.
 */
export function parkedDetail(record: RunRecord): string | null {
  const calls = parkedBatch(record);
  if (calls === null) return null;
  const items = calls
    .map(
      (call) =>
        `<li><b>${escapeHtml(call.name)}</b> <code>${escapeHtml(call.callId)}</code><pre>${escapeHtml(JSON.stringify(call.args, null, 1).slice(0, 4000))}</pre></li>`,
    )
    .join("");
  const runId = escapeHtml(record.workflowRunId ?? record.runId);
  return `<div class="approval">Waits for a person: nothing of this batch ran; the calls that need approval are pending.<ul>${items}</ul>Decide with <code>forge runs approve|deny ${runId} [--call &lt;id&gt;] [--reason …]</code> (a queued run) or <code>runner.resume(workflow, snapshot, { decisions })</code>.</div>`;
}
