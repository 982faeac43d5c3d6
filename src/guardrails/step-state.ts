/**
 * Step and prerequisite bookkeeping as plain data plus pure functions, so the same rules drive
 * the StepEnforcer middleware and the workflow machine's JSON context.
 */
import { type Prerequisite, prerequisiteTool } from "../core/tools.ts";
import type { ToolCall } from "../core/types.ts";

/** A successful call, kept for arg-matched prerequisites. */
export interface RecordedCall {
  tool: string;
  args: Record<string, unknown>;
}

/** Progress through a workflow's steps. JSON-serializable. */
export interface StepProgress {
  /** Tools that completed successfully, in first-completion order. */
  completedSteps: string[];
  /** Every successful call with its arguments. */
  calls: RecordedCall[];
}

/** An empty progress record. */
export function createStepProgress(): StepProgress {
  return { completedSteps: [], calls: [] };
}

/** Record a successful call; returns a new progress record. `keepArgs` false skips the call log. */
export function recordStep(
  progress: StepProgress,
  tool: string,
  args: Record<string, unknown> = {},
  keepArgs = true,
): StepProgress {
  const completedSteps = progress.completedSteps.includes(tool)
    ? progress.completedSteps
    : [...progress.completedSteps, tool];
  return { completedSteps, calls: keepArgs ? [...progress.calls, { tool, args }] : progress.calls };
}

/** Tools whose arguments some arg-matched prerequisite needs (only their calls must be kept). */
export function argMatchedTools(
  prerequisites: Readonly<Record<string, readonly Prerequisite[]>>,
): Set<string> {
  const tools = new Set<string>();
  for (const list of Object.values(prerequisites)) {
    for (const prerequisite of list) if (typeof prerequisite !== "string") tools.add(prerequisite.tool);
  }
  return tools;
}

/** Required steps not completed yet, in their declared order. */
export function pendingSteps(requiredSteps: readonly string[], progress: StepProgress): string[] {
  return requiredSteps.filter((step) => !progress.completedSteps.includes(step));
}

/** The hint compaction keeps when it drops tool results. */
export function stepSummaryHint(progress: StepProgress): string {
  if (progress.completedSteps.length === 0) return "[No steps completed yet]";
  return `[Steps completed: ${progress.completedSteps.join(", ")}]`;
}

/** The first terminal call of a batch made while required steps are pending, or null. */
export function findPrematureTerminal(
  calls: readonly ToolCall[],
  terminalTools: readonly string[],
  requiredSteps: readonly string[],
  progress: StepProgress,
): { terminalTool: string; pending: string[] } | null {
  const pending = pendingSteps(requiredSteps, progress);
  if (pending.length === 0) return null;
  const terminal = calls.find((call) => terminalTools.includes(call.tool));
  return terminal ? { terminalTool: terminal.tool, pending } : null;
}

/** One call whose prerequisites are unmet. */
export interface PrerequisiteViolation {
  toolName: string;
  /** Missing prerequisite tool names. */
  missing: string[];
  /** The same, with the argument each arg-matched prerequisite needs, for the nudge. */
  described: string[];
}

/**
 * Calls of a batch whose prerequisites are not met by the progress before the batch
 * (a prerequisite called earlier in the same batch does not count).
 */
export function findPrerequisiteViolations(
  calls: readonly ToolCall[],
  prerequisites: Readonly<Record<string, readonly Prerequisite[]>>,
  progress: StepProgress,
): PrerequisiteViolation[] {
  const violations: PrerequisiteViolation[] = [];
  for (const call of calls) {
    const missing: string[] = [];
    const described: string[] = [];
    for (const prerequisite of prerequisites[call.tool] ?? []) {
      if (isSatisfied(prerequisite, call, progress)) continue;
      missing.push(prerequisiteTool(prerequisite));
      described.push(
        typeof prerequisite === "string"
          ? prerequisite
          : `${prerequisite.tool} (with ${prerequisite.matchArg}=${JSON.stringify(call.args[prerequisite.matchArg])})`,
      );
    }
    if (missing.length > 0) violations.push({ toolName: call.tool, missing, described });
  }
  return violations;
}

function isSatisfied(prerequisite: Prerequisite, call: ToolCall, progress: StepProgress): boolean {
  if (typeof prerequisite === "string") return progress.completedSteps.includes(prerequisite);
  const wanted = JSON.stringify(call.args[prerequisite.matchArg]);
  return progress.calls.some(
    (earlier) =>
      earlier.tool === prerequisite.tool &&
      prerequisite.matchArg in earlier.args &&
      JSON.stringify(earlier.args[prerequisite.matchArg]) === wanted,
  );
}
