/**
 * What `WorkflowRunner.resume` accepts, as zod schemas: a workflow actor's persisted snapshot and
 * the checkpoint meta stored with it. Checked before the actor is restored, so a damaged
 * checkpoint fails with `InvalidSnapshotError` naming its field instead of resuming wrongly.
 */
import { z } from "zod";
import { approvalStateSchema } from "../core/approval.ts";
import { InvalidSnapshotError } from "../core/errors.ts";
import { describeIssues, messagesSchema } from "../core/message-schema.ts";

const count = z.number().int().nonnegative();
const strings = z.array(z.string());

/**
 * The workflow machine's context (`WorkflowContext`), as far as resuming depends on it. Lenient
 * where older machine versions differ (fields added since are optional) and on extra fields.
 */
const workflowContextSchema = z.looseObject({
  status: z.enum(["running", "done", "failed", "cancelled", "responded"]),
  runId: z.string(),
  config: z.looseObject({
    toolNames: strings,
    requiredSteps: strings,
    terminalTools: strings,
    prerequisites: z.record(z.string(), z.array(z.unknown())),
    maxIterations: count,
    inferenceOnly: z.boolean(),
    cancelGraceMs: count.optional(),
    toolConcurrency: z.number().int().positive().optional(),
    toolTimeoutMs: z.number().int().positive().optional(),
    toolSubsets: z.enum(["all", "steps"]).optional(),
    earlyCalls: z.enum(["reject", "hold"]).optional(),
    escalation: z
      .array(z.looseObject({ after: z.number().int().positive(), name: z.string(), stay: z.boolean() }))
      .optional(),
  }),
  messages: messagesSchema,
  appended: count,
  iteration: count,
  progress: z.looseObject({ completedSteps: strings, calls: z.array(z.unknown()) }),
  consecutiveRetries: count,
  consecutiveToolErrors: count,
  prematureAttempts: count,
  prereqViolations: count,
  decision: z.looseObject({ kind: z.string() }).nullable(),
  outcomes: z.array(
    z.looseObject({
      callId: z.string(),
      tool: z.string(),
      status: z.enum(["ok", "resolution_error", "error", "denied"]),
      content: z.string(),
    }),
  ),
  contextWarning: z.string().nullable().optional(),
  started: z.record(z.string(), count).optional(),
  activeTools: strings.nullable().optional(),
  escalation: z
    .looseObject({ tier: count, servedBy: strings, switches: z.array(z.looseObject({ iteration: count })) })
    .optional(),
  approval: approvalStateSchema.nullable().optional(),
  needsScreening: z.boolean().optional(),
  failure: z.looseObject({ kind: z.string() }).nullable(),
  checkpointSeq: count.optional(),
});

/** A workflow actor's persisted snapshot (`actor.getPersistedSnapshot()`, JSON round-tripped). */
export const workflowSnapshotSchema = z.looseObject({
  status: z.enum(["active", "done", "error", "stopped"]),
  value: z.union([z.string(), z.record(z.string(), z.unknown())]),
  context: workflowContextSchema,
  children: z.record(
    z.string(),
    z.looseObject({ src: z.string(), snapshot: z.looseObject({ status: z.string() }) }),
  ),
});

/** The checkpoint meta `resume` checks a snapshot against (see `CheckpointMeta`). */
export const resumeMetaSchema = z.looseObject({
  workflow: z.string(),
  definitionHash: z.string(),
  machineVersion: z.number().int(),
  seq: count.optional(),
});

/**
 * Check a snapshot before it is restored; returns it as it is.
 * @throws InvalidSnapshotError naming the first offending field, e.g. `context.iteration`.
 */
export function assertWorkflowSnapshot<T>(snapshot: T): T {
  assertShape(workflowSnapshotSchema, snapshot, "", "snapshot");
  return snapshot;
}

/**
 * Check a checkpoint's meta before it is compared with the workflow; returns it as it is.
 * @throws InvalidSnapshotError naming the first offending field, e.g. `meta.machineVersion`.
 */
export function assertResumeMeta<T>(meta: T): T {
  assertShape(resumeMetaSchema, meta, "meta", "meta");
  return meta;
}

function assertShape(schema: z.ZodType, value: unknown, root: string, whole: string): void {
  const parsed = schema.safeParse(value);
  if (parsed.success) return;
  const issues = describeIssues(root, parsed.error, whole);
  throw new InvalidSnapshotError(
    issues[0]?.field ?? whole,
    issues.map((issue) => issue.line),
  );
}
