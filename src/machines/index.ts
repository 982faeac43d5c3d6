/** The statecharts: the guarded workflow loop (its context, guards, actors and message builders) and the slot worker. */

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
} from "./workflow.machine.ts";
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
