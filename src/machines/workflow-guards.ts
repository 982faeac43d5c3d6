/**
 * The workflow machine's guards: small pure functions of the context (and the executed batch).
 */

import type { ToolCall } from "../core/types.ts";
import { isBudgetExceeded } from "../guardrails/error-tracker.ts";
import { findPrematureTerminal, findPrerequisiteViolations } from "../guardrails/step-state.ts";
import type { ToolOutcome, WorkflowContext } from "./workflow-context.ts";

/** The validated batch awaiting enforcement (empty when none). */
export function acceptedCalls(context: WorkflowContext): ToolCall[] {
  return context.verdict?.kind === "calls" ? context.verdict.calls : [];
}

/** `maxIterations` LLM calls were made without finishing. */
export function iterationsExhausted(context: WorkflowContext): boolean {
  return context.iteration >= context.config.maxIterations;
}

/** The response was text that could not be rescued. */
export function isTextResponse(context: WorkflowContext): boolean {
  return context.verdict?.kind === "text";
}

/** The response named a tool that does not exist. */
export function hasUnknownTools(context: WorkflowContext): boolean {
  return context.verdict?.kind === "unknown_tools";
}

/** This failure to produce a valid call is one more than the retry budget allows. */
export function retriesExhausted(context: WorkflowContext): boolean {
  return (
    context.verdict?.kind !== "calls" &&
    isBudgetExceeded(context.consecutiveRetries + 1, context.config.maxRetriesPerStep)
  );
}

/** The run stops after the first valid batch (the proxy's front half). */
export function isInferenceOnly(context: WorkflowContext): boolean {
  return context.config.inferenceOnly;
}

/** The batch calls a terminal tool while required steps are pending. */
export function isPremature(context: WorkflowContext): boolean {
  const { config } = context;
  return (
    config.stepEnforcement &&
    findPrematureTerminal(
      acceptedCalls(context),
      config.terminalTools,
      config.requiredSteps,
      context.progress,
    ) !== null
  );
}

/** This premature attempt is one more than allowed. */
export function prematureExhausted(context: WorkflowContext): boolean {
  return (
    isPremature(context) &&
    isBudgetExceeded(context.prematureAttempts + 1, context.config.maxPrematureAttempts)
  );
}

/** A call of the batch lacks its prerequisites (checked against the state before the batch). */
export function violatesPrerequisites(context: WorkflowContext): boolean {
  return (
    context.config.stepEnforcement &&
    findPrerequisiteViolations(acceptedCalls(context), context.config.prerequisites, context.progress)
      .length > 0
  );
}

/** This prerequisite violation is one more than allowed. */
export function prerequisitesExhausted(context: WorkflowContext): boolean {
  return (
    violatesPrerequisites(context) &&
    isBudgetExceeded(context.prereqViolations + 1, context.config.maxPrereqViolations)
  );
}

/** A tool of the batch failed (ToolResolutionError does not count). */
export function batchFailed(outcomes: readonly ToolOutcome[]): boolean {
  return outcomes.some((outcome) => outcome.status === "error");
}

/** The batch failed and the failure exceeds the tool-error budget. */
export function toolErrorsExhausted(context: WorkflowContext, outcomes: readonly ToolOutcome[]): boolean {
  return (
    batchFailed(outcomes) && isBudgetExceeded(context.consecutiveToolErrors + 1, context.config.maxToolErrors)
  );
}

/** The successful terminal outcome of a batch, if any. */
export function terminalOutcome(
  context: WorkflowContext,
  outcomes: readonly ToolOutcome[],
): ToolOutcome | undefined {
  return outcomes.find(
    (outcome) => outcome.status === "ok" && context.config.terminalTools.includes(outcome.tool),
  );
}
