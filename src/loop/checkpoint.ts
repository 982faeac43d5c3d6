/**
 * Checkpoints of a run: the persisted snapshot the loop hands out at each checkpoint, with what it
 * takes to resume it safely elsewhere (machine version, workflow definition hash).
 */
import { createHash } from "node:crypto";
import { CheckpointMismatchError } from "../core/errors.ts";
import { toOpenAITool } from "../core/tools.ts";
import type { Workflow } from "../core/workflow.ts";
import type { CheckpointPoint } from "../machines/workflow-actors.ts";

/**
 * The version of the workflow machine's snapshot format (states, context and invoked workers).
 * Bumped whenever a snapshot written by one version cannot be restored by another: 3 leaves the
 * history out of the LLM call in flight, which a version 2 runner could not restore (it refuses a
 * version 3 checkpoint with `CheckpointMismatchError` instead); 4 adds the `awaitingApproval` state
 * (docs/decisions/017), which a version 3 runner could not restore. Versions 2 and 3 still resume.
 */
export const MACHINE_VERSION = 4;

/** The machine versions whose checkpoints this runner resumes. */
const RESUMABLE_MACHINE_VERSIONS: readonly number[] = [2, 3, MACHINE_VERSION];

/** What comes with each checkpoint's snapshot. Store it beside the snapshot. */
export interface CheckpointMeta extends CheckpointPoint {
  /**
   * 1, 2, … the order of this run's checkpoints (a later one supersedes). A resumed run goes on
   * counting from the checkpoint it resumed from (the snapshot carries its `seq` in
   * `context.checkpointSeq`), so the highest `seq` of a run is its latest checkpoint across
   * restarts too.
   */
  seq: number;
  /** The workflow's name. */
  workflow: string;
  /** {@link workflowDefinitionHash} of the workflow the run was started with. */
  definitionHash: string;
  /** {@link MACHINE_VERSION} of the machine that wrote the snapshot. */
  machineVersion: number;
}

/**
 * Persist a checkpoint (`WorkflowRunner.run` / `resume` / `machineFor` option). Awaited: before
 * each LLM call, before each tool batch, and before and after each call. Resume
 * with `runner.resume(workflow, snapshot, { meta })`. A rejection fails the run.
 */
export type Checkpoint = (snapshot: unknown, meta: CheckpointMeta) => Promise<void> | void;

/**
 * A hash of everything in a workflow that a persisted run depends on: its name, system prompt,
 * required and terminal steps, and each tool's name, description, JSON Schema, prerequisites and
 * effects. Implementations are not hashed (a fixed bug does not orphan runs).
 */
export function workflowDefinitionHash(workflow: Workflow): string {
  const definition = {
    name: workflow.name,
    systemPrompt: workflow.systemPrompt,
    requiredSteps: workflow.requiredSteps,
    terminalTools: workflow.terminalTools,
    tools: Object.values(workflow.tools).map((tool) => ({
      schema: toOpenAITool(tool.spec),
      prerequisites: tool.prerequisites,
      effects: tool.effects ?? null,
    })),
  };
  return createHash("sha256").update(JSON.stringify(definition)).digest("hex").slice(0, 16);
}

/**
 * The machine's checkpoint hook for a run of `workflow`, adding the meta the caller stores. Each
 * snapshot handed out carries its `seq` (`context.checkpointSeq`): a run restored from it numbers
 * its checkpoints on from there, as it does from `fromSeq` (a resumed checkpoint's `meta.seq`).
 */
export function checkpointHookFor(workflow: Workflow, checkpoint: Checkpoint, fromSeq = 0) {
  const definitionHash = workflowDefinitionHash(workflow);
  let seq = fromSeq;
  return (snapshot: unknown, point: CheckpointPoint) => {
    seq = Math.max(seq, checkpointSeqOf(snapshot)) + 1;
    return checkpoint(withCheckpointSeq(snapshot, seq), {
      ...point,
      seq,
      workflow: workflow.name,
      definitionHash,
      machineVersion: MACHINE_VERSION,
    });
  };
}

/** The `seq` of the checkpoint a restored workflow snapshot was written with (0: none). */
function checkpointSeqOf(snapshot: unknown): number {
  const seq = (snapshot as { context?: { checkpointSeq?: unknown } } | null)?.context?.checkpointSeq;
  return typeof seq === "number" && Number.isFinite(seq) ? seq : 0;
}

function withCheckpointSeq(snapshot: unknown, seq: number): unknown {
  const { context } = snapshot as { context?: object };
  if (typeof context !== "object" || context === null) return snapshot;
  return { ...(snapshot as object), context: { ...context, checkpointSeq: seq } };
}

/** Refuse a checkpoint written for another workflow definition or machine version. */
export function assertResumable(
  workflow: Workflow,
  meta: Pick<CheckpointMeta, "workflow" | "definitionHash" | "machineVersion">,
): void {
  if (!RESUMABLE_MACHINE_VERSIONS.includes(meta.machineVersion)) {
    throw new CheckpointMismatchError(
      "machineVersion",
      RESUMABLE_MACHINE_VERSIONS.join(" or "),
      String(meta.machineVersion),
    );
  }
  if (meta.workflow !== workflow.name)
    throw new CheckpointMismatchError("workflow", workflow.name, meta.workflow);
  const hash = workflowDefinitionHash(workflow);
  if (meta.definitionHash !== hash)
    throw new CheckpointMismatchError("definitionHash", hash, meta.definitionHash);
}
