/**
 * The workflow machine's context: JSON-only control state (counters, step progress, iteration)
 * kept apart from the message history the model sees, plus the run's configuration.
 */
import type { ApprovalState } from "../core/approval.ts";
import type { Message } from "../core/messages.ts";
import type { Prerequisite } from "../core/tools.ts";
import {
  createGuardCounters,
  type Decision,
  type GuardCounters,
  type GuardRules,
} from "../guardrails/decisions.ts";
import type { EscalationRecord, EscalationRule } from "../guardrails/escalation.ts";
import { DEFAULT_LIMITS } from "../guardrails/limits.ts";
import { createStepProgress, type StepProgress } from "../guardrails/step-state.ts";
import type { ToolSubsets } from "../guardrails/tool-subset.ts";

/** Limits and switches of one run. JSON-serializable. */
export interface WorkflowConfig extends GuardRules {
  toolNames: string[];
  requiredSteps: string[];
  terminalTools: string[];
  prerequisites: Record<string, Prerequisite[]>;
  maxIterations: number;
  /** On: stop after the first valid batch (the proxy's front half); nothing is executed. */
  inferenceOnly: boolean;
  /**
   * How long a cancelled run waits for the tool call in flight, in ms: one that returns within it
   * is recorded as completed. Default {@link DEFAULT_CANCEL_GRACE_MS} (also for snapshots older
   * than this field).
   */
  cancelGraceMs?: number;
  /**
   * How many calls of one batch run at once (`WorkflowRunnerOptions.toolConcurrency`); absent: 1,
   * one at a time. Above 1 the LLM calls also ask for parallel tool calls
   * (`SendOptions.parallelToolCalls`). `unsafe` tools always run alone (docs/decisions/012).
   */
  toolConcurrency?: number;
  /** A call's timeout in ms when its tool sets none (`WorkflowRunnerOptions.toolTimeoutMs`); absent: none. */
  toolTimeoutMs?: number;
  /**
   * On (default): the request after a prose answer (a retry nudge), and each request after a
   * premature terminal call until a clean batch, asks the client for a tool call
   * (`SendOptions.toolChoice: "required"`). Absent in snapshots older than the option: on.
   */
  forceToolChoiceOnRetry?: boolean;
  /**
   * `steps`: each request offers only the tools that can make progress now (`stepToolSubset`);
   * `all` or absent: every tool (`WorkflowRunnerOptions.toolSubsets`).
   */
  toolSubsets?: ToolSubsets;
  /**
   * The escalation tiers in rising `after` order (`WorkflowRunnerOptions.escalation`); their
   * clients are deps (`WorkflowMachineDeps.escalationClients`, same order). Absent: none.
   */
  escalation?: EscalationRule[];
}

/** How long a cancelled run waits for the tool call in flight by default: 5 s. */
export const DEFAULT_CANCEL_GRACE_MS = 5_000;

/**
 * The outcome of one tool call of an executed batch. `denied`: a person denied the call and it
 * never ran (docs/decisions/036); like `resolution_error`, no step is recorded and no tool error
 * counted.
 */
export interface ToolOutcome {
  callId: string;
  tool: string;
  args: Record<string, unknown>;
  status: "ok" | "resolution_error" | "error" | "denied";
  /** The TOOL_RESULT content sent to the model. */
  content: string;
  /** The tool's return value (JSON-compatible) when status is "ok". */
  value?: unknown;
  errorName?: string;
  errorMessage?: string;
}

/** Why a run failed, as data; the runner turns it back into a typed error. */
export type WorkflowFailure =
  | { kind: "max_iterations"; iterations: number; completedSteps: string[]; pendingSteps: string[] }
  | { kind: "retries_exhausted"; rawResponse: string; attempts: number }
  | { kind: "step_enforcement"; terminalTool: string; attempts: number; pendingSteps: string[] }
  | { kind: "prerequisite"; toolName: string; violations: number; missingPrereqs: string[] }
  | {
      kind: "tool_execution";
      toolName: string;
      errorName: string;
      errorMessage: string;
      /** The failing call, when a tool threw (its error reaches `onToolError` under this id). */
      callId?: string;
    }
  | {
      kind: "actor_error";
      source: "inference" | "tools";
      name: string;
      message: string;
      details: Record<string, unknown>;
    };

/** Where a run stands. */
export type WorkflowStatus = "running" | "done" | "failed" | "cancelled" | "responded";

/** The machine's context. Every field is JSON. */
export interface WorkflowContext extends GuardCounters {
  status: WorkflowStatus;
  /** Seeds the run's deterministic tool-call ids. */
  runId: string;
  config: WorkflowConfig;
  /** The history the model sees (compacted in place between iterations). */
  messages: Message[];
  /** How many messages the last appending action added at the end of `messages` (reported next). */
  appended: number;
  /** LLM calls made so far. */
  iteration: number;
  progress: StepProgress;
  /**
   * What this pass decided (decisions.ts): set once after validation and once after enforcement;
   * the states branch on its `kind` and the actions apply it.
   */
  decision: Decision | null;
  /** Outcomes of the batch in flight, as each call finishes (kept when a run is cancelled mid-batch). */
  outcomes: ToolOutcome[];
  /** The context warning this pass's request carries (transient: never in `messages`), or null. */
  contextWarning: string | null;
  /** How many times each call of the batch in flight was started (tracked with checkpoints or unsafe tools). */
  started: Record<string, number>;
  /**
   * The tools this pass's request offers and its calls are validated against (a call to another
   * tool is an unknown tool), or null/absent for every tool. Set at the start of each pass.
   */
  activeTools?: string[] | null;
  /** Which client served each call and the switches between them; absent without escalation. */
  escalation?: EscalationRecord;
  /**
   * The batch in flight's calls that wait for a person, and the decisions taken on them: set when
   * the batch stops in `awaitingApproval`, cleared once the batch is recorded. Absent in snapshots
   * older than approval (none waits).
   */
  approval?: ApprovalState | null;
  /**
   * The accepted batch names a tool that declares `needsApproval`: it goes through the `approve`
   * step before it runs (set with each enforcement decision while the run has such batches).
   */
  needsScreening?: boolean;
  /** Result of the terminal tool once it succeeded. */
  result: unknown;
  failure: WorkflowFailure | null;
  /**
   * The `seq` of the checkpoint this context was persisted with: set only in the snapshots the
   * checkpoint hook hands out, so a run restored from one numbers its checkpoints on from it.
   */
  checkpointSeq?: number;
}

/** What a workflow actor starts from. */
export interface WorkflowInput {
  config: WorkflowConfig;
  messages: Message[];
  /** Seeds tool-call ids; random when omitted. Fix it to make two runs' histories comparable. */
  runId?: string;
}

/** Fill in defaults for a config. */
export function createWorkflowConfig(
  config: Partial<WorkflowConfig> & Pick<WorkflowConfig, "toolNames">,
): WorkflowConfig {
  return {
    requiredSteps: [],
    terminalTools: [],
    prerequisites: {},
    ...DEFAULT_LIMITS,
    rescueEnabled: true,
    stepEnforcement: true,
    inferenceOnly: false,
    cancelGraceMs: DEFAULT_CANCEL_GRACE_MS,
    forceToolChoiceOnRetry: true,
    ...config,
  };
}

/** The context a fresh run starts with. */
export function createWorkflowContext(input: WorkflowInput): WorkflowContext {
  return {
    status: "running",
    runId: input.runId ?? Math.random().toString(36).slice(2, 10),
    config: input.config,
    // Frozen, as every history the machine builds (appendMessages): the loop only ever appends.
    messages: Object.freeze([...input.messages]) as Message[],
    appended: 0,
    iteration: 0,
    progress: createStepProgress(),
    ...createGuardCounters(),
    decision: null,
    outcomes: [],
    contextWarning: null,
    started: {},
    approval: null,
    result: null,
    failure: null,
  };
}
