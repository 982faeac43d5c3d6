/**
 * What the workflow machine's two workers share: where their dependencies come from (fixed, or looked
 * up per workflow actor) and the checkpoint hook they await before their work.
 */
import type { AnyActorRef, Snapshot } from "xstate";
import { WorkflowDefinitionError } from "../core/errors.ts";

/** Dependencies fixed when the logic is built, or looked up from the workflow actor a worker answers. */
export type DepsSource<TDeps extends object> = TDeps | ((workflow: AnyActorRef) => TDeps);

export function resolveDeps<TDeps extends object>(
  source: DepsSource<TDeps>,
  parent: AnyActorRef | undefined,
): TDeps {
  if (typeof source !== "function") return source;
  if (!parent) throw new WorkflowDefinitionError("A workflow worker was started without a parent actor");
  return source(parent);
}

/**
 * Why a checkpoint is taken: before an LLM call, before a tool batch, around one call, or as the
 * run stops to wait for a person's approval (the snapshot to resume it from).
 */
export type CheckpointReason = "inference" | "tools" | "call_started" | "call_done" | "awaiting_approval";

/** What the loop knows when it asks for a checkpoint. */
export interface CheckpointPoint {
  reason: CheckpointReason;
  runId: string;
  /** LLM calls made so far. */
  iteration: number;
  /** The call a `call_started` / `call_done` checkpoint is about. */
  callId?: string;
}

/**
 * Persist a workflow actor's snapshot; awaited before the loop goes on, so a run resumed from it
 * redoes at most the step that was under way. A rejection fails the run.
 */
export type CheckpointHook = (snapshot: Snapshot<unknown>, point: CheckpointPoint) => Promise<void> | void;

/** Take a checkpoint of the workflow actor `parent` at `point`, if a hook is set. */
export async function checkpointOf(
  hook: CheckpointHook | undefined,
  parent: AnyActorRef | undefined,
  point: CheckpointPoint,
): Promise<void> {
  if (hook === undefined || parent === undefined) return;
  await hook(parent.getPersistedSnapshot(), point);
}
