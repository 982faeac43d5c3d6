/**
 * forge-guardrails: reliable tool calling for self-hosted LLMs.
 *
 * The root entry is the loop and everything it needs, with no heavy dependency: data, tools and
 * workflows, errors, guardrails and middleware, context compaction, prompts and rescue parsing,
 * the statecharts, `WorkflowRunner`, `runInference` and `SlotWorker`. Clients, the proxy and the
 * server manager are subpaths: `forge-guardrails/clients`, `/llama-cpp`, `/anthropic`, `/proxy`,
 * `/server`; test doubles are `forge-guardrails/testing`.
 */
export type { CompactOptions, CompactResult, CompactStrategy } from "./context/compact-strategy.ts";
export {
  type CompactEvent,
  ContextManager,
  type ContextManagerOptions,
  type ThresholdEvent,
} from "./context/context-manager.ts";
export { NoCompact } from "./context/no-compact.ts";
export { SlidingWindowCompact, type SlidingWindowCompactOptions } from "./context/sliding-window-compact.ts";
export { isStepSummary } from "./context/step-summary.ts";
export { TieredCompact, type TieredCompactOptions } from "./context/tiered-compact.ts";
export {
  charRatioEstimator,
  estimateTokensByChars,
  MESSAGE_OVERHEAD_TOKENS,
  type TokenEstimator,
} from "./context/token-estimator.ts";
export { DROPPED_RESULT_CONTENT } from "./context/tool-result-compaction.ts";
export {
  BackendError,
  BudgetResolutionError,
  CheckpointMismatchError,
  ContextBudgetExceeded,
  ContextDiscoveryError,
  describeValue,
  ForgeError,
  HardwareDetectionError,
  InvalidMessageError,
  InvalidResponseError,
  InvalidSnapshotError,
  MaxIterationsError,
  OutcomeUnknownError,
  PrerequisiteError,
  PromptTemplateError,
  StepEnforcementError,
  StreamError,
  ThinkingNotSupportedError,
  ToolCallError,
  ToolCallRepairError,
  ToolExecutionError,
  ToolOutputError,
  ToolResolutionError,
  ToolTimeoutError,
  UnsupportedModelError,
  WorkflowCancelledError,
  WorkflowDefinitionError,
} from "./core/errors.ts";
export { appendMessages } from "./core/history.ts";
export {
  type ApiFormat,
  createMessage,
  durableMessages,
  foldReasoning,
  isTransientMessage,
  type Message,
  type MessageMeta,
  MessageRole,
  MessageType,
  serializeHistory,
  type ToolCallInfo,
  TRANSIENT_MESSAGE_TYPES,
  toApiMessage,
} from "./core/messages.ts";
export {
  applyReasoningReplay,
  REASONING_REPLAY_POLICIES,
  type ReasoningReplay,
} from "./core/reasoning-replay.ts";
export type {
  CompactionEvent,
  CompactionMeasure,
  LLMCallEndEvent,
  LLMCallStartEvent,
  ObserverLogger,
  RunEndEvent,
  RunObserver,
  RunPosition,
  RunStartEvent,
  RunStateEvent,
  RunStateName,
  ToolCallEvent,
  ToolResultEvent,
} from "./core/run-observer.ts";
export {
  type DefineToolOptions,
  defineTool,
  type JsonSchema,
  type Prerequisite,
  prerequisiteTool,
  type ToolCallContext,
  type ToolDef,
  type ToolEffects,
  type ToolSpec,
  toOpenAITool,
  toolJsonSchema,
  toolSpecFromJsonSchema,
} from "./core/tools.ts";
export {
  ChunkType,
  isLLMResponse,
  isToolCallList,
  type LLMClient,
  type LLMResponse,
  type SamplingOverrides,
  type SendOptions,
  type StreamChunk,
  type TextResponse,
  type TokenUsage,
  type ToolCall,
  type ToolChoice,
} from "./core/types.ts";
export {
  type DefineWorkflowOptions,
  defineWorkflow,
  renderSystemPrompt,
  type Workflow,
  workflowToolSpecs,
} from "./core/workflow.ts";
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
} from "./guardrails/decisions.ts";
export { ErrorTracker, type ErrorTrackerOptions } from "./guardrails/error-tracker.ts";
export {
  type BatchOutcome,
  type GuardrailAction,
  type GuardrailResult,
  Guardrails,
  type GuardrailsOptions,
} from "./guardrails/guardrails.ts";
export { DEFAULT_LIMITS, type GuardLimits, guardLimitsSchema } from "./guardrails/limits.ts";
export type { Nudge, NudgeKind } from "./guardrails/nudge.ts";
export type { RepairToolCall, ToolCallRepairInput, ToolCallRepairReason } from "./guardrails/repair.ts";
export { type RejectDecision, rejectionReplies } from "./guardrails/replies.ts";
export {
  buildRetryNudge,
  ResponseValidator,
  type ResponseValidatorOptions,
  type RetryNudge,
  type ValidationResult,
} from "./guardrails/response-validator.ts";
export {
  MAX_STEP_TIER,
  type StepCheck,
  StepEnforcer,
  type StepEnforcerOptions,
} from "./guardrails/step-enforcer.ts";
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
} from "./guardrails/step-state.ts";
export { type ValidateOptions, type Verdict, validateResponse } from "./guardrails/validate-response.ts";
export {
  type Checkpoint,
  type CheckpointMeta,
  MACHINE_VERSION,
  workflowDefinitionHash,
} from "./loop/checkpoint.ts";
export { errorFromOutput } from "./loop/failure.ts";
export { type InferenceResult, type RunInferenceOptions, runInference } from "./loop/inference.ts";
export {
  type ResumeOptions,
  type RunOptions,
  type WorkflowHooks,
  WorkflowRunner,
  type WorkflowRunnerOptions,
} from "./loop/runner.ts";
export { SlotWorker, SlotWorkerError, type SubmitOptions } from "./loop/slot-worker.ts";
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
} from "./machines/slot-worker.machine.ts";
export {
  createWorkflowMachine,
  type HistoryCompactor,
  type WorkflowActor,
  type WorkflowDepsLookup,
  type WorkflowEvent,
  type WorkflowMachine,
  type WorkflowMachineDeps,
  type WorkflowOutput,
  type WorkflowSnapshot,
} from "./machines/workflow.machine.ts";
export {
  type CheckpointHook,
  type CheckpointPoint,
  type CheckpointReason,
  createInferenceLogic,
  createToolExecutionLogic,
  type DepsSource,
  serializeToolResult,
} from "./machines/workflow-actors.ts";
export {
  createWorkflowConfig,
  createWorkflowContext,
  type ToolOutcome,
  type WorkflowConfig,
  type WorkflowContext,
  type WorkflowFailure,
  type WorkflowInput,
  type WorkflowStatus,
} from "./machines/workflow-context.ts";
export { notRunNudge, prerequisiteNudge, retryNudge, stepNudge, unknownToolNudge } from "./prompts/nudges.ts";
export type { RescueOptions } from "./prompts/rescue/index.ts";
export { detectToolCalls, rescueToolCall } from "./prompts/rescue/index.ts";
export type { RescueContext, RescueOutcome, RescueParser } from "./prompts/rescue/outcome.ts";
export { buildToolPrompt, extractToolCall } from "./prompts/tool-prompt.ts";
export { RESPOND_TOOL_NAME, respondTool } from "./tools/respond.ts";
