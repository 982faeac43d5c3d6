/**
 * `forge-guardrails/machines`: the statecharts' parts, for building a machine of your own around
 * them (the workflow machine itself is in the root entry): its context, config and actor factories, the slot worker machine and its
 * ordering, and the pure guardrail decisions the states branch on (ADR 008).
 */
export {
  type BatchDecision,
  type CallOutcome,
  countersAfter,
  countersAfterBatch,
  createGuardCounters,
  type Decision,
  decideBatch,
  decideEnforcement,
  decidePremature,
  decidePrerequisites,
  decideResponse,
  type EnforceDecision,
  type GuardCounters,
  type GuardRules,
  type GuardState,
  type MalformedCall,
  type ResponseDecision,
} from "../guardrails/decisions.ts";
export {
  createEscalationRecord,
  type EscalationRule,
  escalateFor,
  failureStreak,
} from "../guardrails/escalation.ts";
export { type RejectDecision, rejectionReplies } from "../guardrails/replies.ts";
export {
  argMatchedTools,
  createStepProgress,
  findPrematureTerminal,
  findPrerequisiteViolations,
  type PrerequisiteViolation,
  pendingSteps,
  type RecordedCall,
  recordStep,
  type StepProgress,
  stepSummaryHint,
} from "../guardrails/step-state.ts";
export { chooseActiveTools, type SubsetRules, stepToolSubset } from "../guardrails/tool-subset.ts";

export {
  compareJobs,
  enqueueJob,
  preempts,
  type RunJobInput,
  type SlotJob,
  type SlotWorkerActor,
  type SlotWorkerContext,
  type SlotWorkerEvent,
  type SlotWorkerMachine,
  type SlotWorkerSnapshot,
  slotWorkerMachine,
} from "./slot-worker.machine.ts";
// The workflow machine itself (`createWorkflowMachine`, its types, the checkpoint hook) is the
// root's: `src/index.ts` exports it, and a name has one entry point.
export {
  createInferenceLogic,
  createToolExecutionLogic,
  type DepsSource,
  serializeToolResult,
} from "./workflow-actors.ts";
export {
  createWorkflowConfig,
  createWorkflowContext,
  type ToolOutcome,
  type WorkflowConfig,
  type WorkflowContext,
  type WorkflowFailure,
  type WorkflowInput,
  type WorkflowStatus,
} from "./workflow-context.ts";
