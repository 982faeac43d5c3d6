/**
 * The workflow machine's context: JSON-only control state (counters, step progress, iteration)
 * kept apart from the message history the model sees, plus the run's configuration.
 */
import type { Message } from "../core/messages.ts";
import type { Prerequisite } from "../core/tools.ts";
import type { LLMResponse } from "../core/types.ts";
import { createStepProgress, type StepProgress } from "../guardrails/step-state.ts";
import type { Verdict } from "../guardrails/validate-response.ts";

/** Limits and switches of one run. JSON-serializable. */
export interface WorkflowConfig {
  toolNames: string[];
  requiredSteps: string[];
  terminalTools: string[];
  prerequisites: Record<string, Prerequisite[]>;
  maxIterations: number;
  maxRetriesPerStep: number;
  maxToolErrors: number;
  maxPrematureAttempts: number;
  maxPrereqViolations: number;
  rescueEnabled: boolean;
  /** Off: premature terminal calls and unmet prerequisites are not checked (ablation). */
  stepEnforcement: boolean;
  /** On: stop after the first valid batch (the proxy's front half); nothing is executed. */
  inferenceOnly: boolean;
}

/** The outcome of one tool call of an executed batch. */
export interface ToolOutcome {
  callId: string;
  tool: string;
  args: Record<string, unknown>;
  status: "ok" | "resolution_error" | "error";
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
  | { kind: "tool_execution"; toolName: string; errorName: string; errorMessage: string }
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
export interface WorkflowContext {
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
  consecutiveRetries: number;
  consecutiveToolErrors: number;
  prematureAttempts: number;
  prereqViolations: number;
  /** The last response, until validated. */
  response: LLMResponse | null;
  verdict: Verdict | null;
  /** Result of the terminal tool once it succeeded. */
  result: unknown;
  failure: WorkflowFailure | null;
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
    maxIterations: 10,
    maxRetriesPerStep: 3,
    maxToolErrors: 2,
    maxPrematureAttempts: 3,
    maxPrereqViolations: 2,
    rescueEnabled: true,
    stepEnforcement: true,
    inferenceOnly: false,
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
    consecutiveRetries: 0,
    consecutiveToolErrors: 0,
    prematureAttempts: 0,
    prereqViolations: 0,
    response: null,
    verdict: null,
    result: null,
    failure: null,
  };
}
