/** Guardrail middleware: validation, step enforcement and error budgets for any loop. */
export { DEFAULT_RETRY_BOUNDS, type RetryBounds, retryBoundsSchema } from "./bounded-retry.ts";
export {
  type CallLoopDecision,
  type CallLoopRules,
  callLoopRulesSchema,
  DEFAULT_CALL_LOOP_RULES,
  decideCallLoop,
} from "./call-loop.ts";
export { ErrorTracker, type ErrorTrackerOptions } from "./error-tracker.ts";
export {
  BASE_CLIENT_NAME,
  type EscalationOption,
  type EscalationReason,
  type EscalationRecord,
  type EscalationSwitch,
  type EscalationTier,
  escalationCount,
  FailureKind,
} from "./escalation.ts";
export {
  type BatchOutcome,
  type GuardrailAction,
  type GuardrailResult,
  Guardrails,
  type GuardrailsOptions,
} from "./guardrails.ts";
export { DEFAULT_LIMITS, type GuardLimits, guardLimitsSchema } from "./limits.ts";
export type { Nudge, NudgeKind } from "./nudge.ts";
export {
  checkPermission,
  type PermissionPolicy,
  type PermissionPolicyInput,
  type PermissionRule,
  type PermissionVerdict,
  permissionPolicySchema,
} from "./permission-policy.ts";
export type { RepairToolCall, ToolCallRepairInput, ToolCallRepairReason } from "./repair.ts";
export {
  buildRetryNudge,
  ResponseValidator,
  type ResponseValidatorOptions,
  type RetryNudge,
  type ValidationResult,
} from "./response-validator.ts";
export { MAX_STEP_TIER, type StepCheck, StepEnforcer, type StepEnforcerOptions } from "./step-enforcer.ts";
// Tool-set narrowing (`narrowTools`, `rankTools`) is exported from `forge-guardrails/proxy`: it
// loads minisearch, which the root entry stays free of.
export type { NarrowedTools, ToolNarrowingRules } from "./tool-narrowing.ts";
export { type ActiveTools, type ActiveToolsState, ToolSubsets } from "./tool-subset.ts";
export { type ValidateOptions, type Verdict, validateResponse } from "./validate-response.ts";
