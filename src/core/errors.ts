/**
 * The error hierarchy. Every error's `name` equals its class name, and each carries the context
 * a caller needs to act on it (attempts, pending steps, the last raw output, the history).
 */
import type { Snapshot } from "xstate";
import type { ApprovalState, PendingApproval } from "./approval.ts";
import type { Message } from "./messages.ts";

/** Base class of every error the library raises. */
export class ForgeError extends Error {
  /** The run's history when the error ended a run (set by the loop), so a failed run loses nothing. */
  messages?: Message[];

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The model failed to produce a valid tool call after the retry budget. */
export class ToolCallError extends ForgeError {
  readonly rawResponse: string | null;
  constructor(message: string, rawResponse: string | null = null, options?: { cause?: unknown }) {
    super(message, options);
    this.rawResponse = rawResponse;
  }
}

/**
 * A user's `repairToolCall` hook threw, or returned something that is not a list of tool calls.
 * The run fails with it (the hook's own error is its `cause`): a broken hook is not a model error
 * to nudge about.
 */
export class ToolCallRepairError extends ForgeError {
  /** The model's text the hook was asked to repair. */
  readonly rawResponse: string;
  constructor(message: string, rawResponse: string, options?: { cause?: unknown }) {
    super(message, options);
    this.rawResponse = rawResponse;
  }
}

/** A tool kept failing: the model did not self-correct within `maxToolErrors` consecutive batches. */
export class ToolExecutionError extends ForgeError {
  readonly toolName: string;
  constructor(toolName: string, cause: unknown) {
    const detail = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    super(`Tool '${toolName}' failed and the model did not recover: ${detail}`, { cause });
    this.toolName = toolName;
  }
}

/** The run used `maxIterations` LLM calls without a successful terminal tool. */
export class MaxIterationsError extends ForgeError {
  readonly iterations: number;
  readonly completedSteps: string[];
  readonly pendingSteps: string[];
  constructor(iterations: number, completedSteps: string[], pendingSteps: string[]) {
    super(
      `Workflow did not finish within ${iterations} iterations (completed: [${completedSteps.join(", ")}], pending: [${pendingSteps.join(", ")}]). Raise maxIterations or check the model's tool calls.`,
    );
    this.iterations = iterations;
    this.completedSteps = completedSteps;
    this.pendingSteps = pendingSteps;
  }
}

/** The model kept calling a terminal tool before the required steps were done. */
export class StepEnforcementError extends ForgeError {
  readonly terminalTool: string;
  readonly attempts: number;
  readonly pendingSteps: string[];
  constructor(terminalTool: string, attempts: number, pendingSteps: string[]) {
    super(
      `Model called terminal tool '${terminalTool}' prematurely ${attempts} times in a row; required steps still pending: [${pendingSteps.join(", ")}]`,
    );
    this.terminalTool = terminalTool;
    this.attempts = attempts;
    this.pendingSteps = pendingSteps;
  }
}

/** The model kept calling a tool without first calling its prerequisites. */
export class PrerequisiteError extends ForgeError {
  readonly toolName: string;
  readonly violations: number;
  readonly missingPrereqs: string[];
  constructor(toolName: string, violations: number, missingPrereqs: string[]) {
    super(
      `Model called '${toolName}' without its prerequisites ${violations} times in a row; missing: [${missingPrereqs.join(", ")}]`,
    );
    this.toolName = toolName;
    this.violations = violations;
    this.missingPrereqs = missingPrereqs;
  }
}

/** The run was cancelled; carries everything needed to resume, discard or log it. */
export class WorkflowCancelledError extends ForgeError {
  readonly completedSteps: string[];
  readonly iteration: number;
  override messages: Message[];
  constructor(messages: Message[], completedSteps: string[], iteration: number) {
    super(`Workflow cancelled at iteration ${iteration} (completed steps: [${completedSteps.join(", ")}])`);
    this.messages = messages;
    this.completedSteps = completedSteps;
    this.iteration = iteration;
  }
}

/**
 * An option object named both `rank` and its deprecated alias `priority`, with different values:
 * keep `rank` (lower is served first) and drop `priority`.
 */
export class RankConflictError extends ForgeError {
  readonly rank: number;
  readonly priority: number;
  constructor(owner: string, rank: number, priority: number) {
    super(
      `${owner}: rank ${rank} and priority ${priority} disagree. Keep rank (lower is served first) and drop priority, its deprecated alias.`,
    );
    this.rank = rank;
    this.priority = priority;
  }
}

/** A workflow or tool definition is invalid; the message names the offending part. */
export class WorkflowDefinitionError extends ForgeError {}

/** A system-prompt template and its `promptVars` do not match. */
export class PromptTemplateError extends ForgeError {}

/** A client returned something that is neither a tool-call list nor a text response. */
export class InvalidResponseError extends ForgeError {
  readonly received: string;
  constructor(received: unknown) {
    const shown = describeValue(received);
    super(
      `LLM client returned an invalid response: expected ToolCall[] or { content: string }, got ${shown}. Fix the client's send()/sendStream().`,
    );
    this.received = shown;
  }
}

/** A tool returned a value that cannot be serialized into the history. */
export class ToolOutputError extends ForgeError {
  readonly toolName: string;
  constructor(toolName: string, reason: string) {
    super(
      `Tool '${toolName}' returned a value that cannot be serialized to JSON (${reason}). Return a string or a JSON-serializable value.`,
    );
    this.toolName = toolName;
  }
}

/**
 * A resumed run found an `unsafe` tool call that an earlier process started and never finished,
 * and was configured to stop rather than tell the model (`unsafeInterrupted: "fail"`).
 */
export class OutcomeUnknownError extends ForgeError {
  readonly toolName: string;
  readonly callId: string;
  constructor(toolName: string, callId: string) {
    super(
      `Tool '${toolName}' (call ${callId}) was interrupted by a restart before it returned, and it is marked effects: "unsafe", so it is not run again. Check whether its effect happened, then start a new run; or set unsafeInterrupted: "tool_error" to let the model decide.`,
    );
    this.toolName = toolName;
    this.callId = callId;
  }
}

/**
 * A tool call ran past its timeout (`defineTool({ timeoutMs })`, or `WorkflowRunner`'s
 * `toolTimeoutMs`): its `ToolCallContext.signal` was aborted with this error as the reason, and the
 * model got it as the call's tool error (`[ToolError] ToolTimeoutError: …`, counted against
 * `maxToolErrors`). The call's late result is dropped. For an `unsafe` tool the outcome is unknown
 * (`outcomeUnknown`): its effect may still happen, and the loop never runs it again by itself.
 */
export class ToolTimeoutError extends ForgeError {
  readonly toolName: string;
  readonly callId: string;
  readonly timeoutMs: number;
  /** True for an `unsafe` tool: whether its effect happened is not known. */
  readonly outcomeUnknown: boolean;
  constructor(toolName: string, callId: string, timeoutMs: number, outcomeUnknown = false) {
    const unknown = outcomeUnknown
      ? ". It is marked unsafe: its effect may or may not have happened, and it was not run again; check its result another way before calling it again."
      : "";
    super(`'${toolName}' did not return within ${timeoutMs} ms${unknown}`);
    this.toolName = toolName;
    this.callId = callId;
    this.timeoutMs = timeoutMs;
    this.outcomeUnknown = outcomeUnknown;
  }
}

/**
 * A checkpoint cannot resume here: it was written by another machine version or for another
 * definition of the workflow.
 */
export class CheckpointMismatchError extends ForgeError {
  readonly field: "machineVersion" | "definitionHash" | "workflow";
  readonly expected: string;
  readonly found: string;
  constructor(field: CheckpointMismatchError["field"], expected: string, found: string) {
    super(
      `The checkpoint's ${field} is ${found}, this runner's is ${expected}: the run was started with a different ${field === "machineVersion" ? "version of forge-guardrails' workflow machine" : "workflow definition"}. Finish it with the code that started it, or start a new run.`,
    );
    this.field = field;
    this.expected = expected;
    this.found = found;
  }
}

/**
 * A history handed to the library (`initialMessages`, `runInference`'s `messages`) is not a list of
 * messages: `field` names the first offending one, e.g. `initialMessages[1].content`.
 */
export class InvalidMessageError extends ForgeError {
  readonly field: string;
  /** Every problem found, one line each (`field: what was wrong`). */
  readonly issues: string[];
  constructor(field: string, issues: string[]) {
    super(`Invalid message history: ${issues.join("; ")}`);
    this.field = field;
    this.issues = issues;
  }
}

/**
 * A persisted snapshot or its checkpoint meta cannot be resumed: it is damaged or not a workflow
 * actor's snapshot. `field` names the first offending field, e.g. `context.iteration`.
 */
export class InvalidSnapshotError extends ForgeError {
  readonly field: string;
  /** Every problem found, one line each (`field: what was wrong`). */
  readonly issues: string[];
  constructor(field: string, issues: string[]) {
    super(`Cannot resume from this checkpoint: ${issues.join("; ")}`);
    this.field = field;
    this.issues = issues;
  }
}

/** Context still exceeds the budget after compaction. */
export class ContextBudgetExceeded extends ForgeError {
  readonly estimatedTokens: number;
  readonly budgetTokens: number;
  constructor(estimatedTokens: number, budgetTokens: number) {
    super(
      `Context needs ~${estimatedTokens} tokens, over the budget of ${budgetTokens} even after compaction`,
    );
    this.estimatedTokens = estimatedTokens;
    this.budgetTokens = budgetTokens;
  }
}

/** No context budget could be determined from any source. */
export class BudgetResolutionError extends ForgeError {}

/** Hardware detection answered but its output could not be understood. */
export class HardwareDetectionError extends ForgeError {}

/** The backend's context length could not be read. */
export class ContextDiscoveryError extends ForgeError {}

/** The backend answered with an HTTP error (or timed out: 408). `body` holds what it said. */
export class BackendError extends ForgeError {
  readonly statusCode: number;
  readonly body: string;
  /** The backend's `Retry-After`, in seconds, when it sent one (429, 503). */
  readonly retryAfterSeconds: number | undefined;
  constructor(
    statusCode: number,
    body: string,
    message?: string,
    options?: { cause?: unknown; retryAfterSeconds?: number | undefined },
  ) {
    super(message ?? `Backend returned HTTP ${statusCode}: ${body.slice(0, 500)}`, options);
    this.statusCode = statusCode;
    this.body = body;
    this.retryAfterSeconds = options?.retryAfterSeconds;
  }
}

/**
 * A `Retry-After` header in seconds: delay-seconds as given, an HTTP date as the seconds until
 * then (0 when past); `undefined` when absent or unreadable.
 */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Number(text);
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}

/** `think: true` was requested but the model does not support thinking. */
export class ThinkingNotSupportedError extends BackendError {
  readonly model: string;
  constructor(model: string, statusCode = 400, body = "") {
    super(statusCode, body, `Model '${model}' does not support thinking, but think=true was requested`);
    this.model = model;
  }
}

/** A stream ended without its FINAL chunk, or was malformed. */
export class StreamError extends ForgeError {
  constructor(message = "Stream ended without a FINAL chunk") {
    super(message);
  }
}

/** `recommendedSampling` was requested for a model the sampling map does not know. */
export class UnsupportedModelError extends ForgeError {
  readonly model: string;
  constructor(model: string, known: readonly string[] = []) {
    super(
      `No recommended sampling known for model '${model}'.${known.length > 0 ? ` Known models: ${known.join(", ")}.` : ""} Pass explicit sampling values or turn recommendedSampling off.`,
    );
    this.model = model;
  }
}

/**
 * Thrown by a tool when its arguments were valid but the data did not resolve (no such id, …).
 * The loop feeds it back to the model without counting a tool error or recording the step.
 * Not a ForgeError: it is for tool authors.
 */
export class ToolResolutionError extends Error {
  readonly toolName: string | undefined;
  constructor(message: string, toolName?: string) {
    super(message);
    this.name = "ToolResolutionError";
    this.toolName = toolName;
  }
}

/** A short, safe description of an arbitrary value for error messages. */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (typeof value === "object") {
    try {
      return JSON.stringify(value).slice(0, 200);
    } catch {
      return Object.prototype.toString.call(value);
    }
  }
  return `${typeof value} ${String(value).slice(0, 200)}`;
}

/**
 * A decision on a call that is already decided (approved or denied before): each pending call is
 * decided once. Nothing changed; read the run's pending calls again.
 */
export class ApprovalAlreadyDecidedError extends ForgeError {
  readonly callId: string;
  /** What it was decided before. */
  readonly decision: "approved" | "denied";
  constructor(callId: string, decision: "approved" | "denied") {
    super(
      `Call ${callId} was already ${decision}; a call awaiting approval is decided once. Nothing changed.`,
    );
    this.callId = callId;
    this.decision = decision;
  }
}

/** A decision on a call that does not await approval in this run (a wrong id, or another run's call). */
export class ApprovalNotPendingError extends ForgeError {
  readonly callId: string;
  /** The calls that do await approval (empty: the run waits for none). */
  readonly pendingCallIds: string[];
  constructor(callId: string, pendingCallIds: string[]) {
    super(
      pendingCallIds.length === 0
        ? `Call ${callId} does not await approval: the run waits for no approval.`
        : `Call ${callId} does not await approval; the pending calls are ${pendingCallIds.join(", ")}.`,
    );
    this.callId = callId;
    this.pendingCallIds = pendingCallIds;
  }
}

/** A decision on a run that is over (cancelled, completed or failed): nothing waits any more. */
export class ApprovalRunClosedError extends ForgeError {
  readonly runId: string;
  /** What became of the run, e.g. `cancelled`. */
  readonly status: string;
  constructor(runId: string, status: string) {
    super(`Run ${runId} is ${status}: it no longer waits for approval, so nothing can be decided.`);
    this.runId = runId;
    this.status = status;
  }
}

/**
 * Not a failure: the run stopped to wait for a person. Calls of its last batch need approval
 * (their tools' `needsApproval`); nothing of that batch ran and no process is held while a person
 * decides. Store `snapshot` and `meta` (as a checkpoint), then resume with the decisions:
 * `runner.resume(workflow, snapshot, { meta, decisions })`, in this process or another.
 */
export class AwaitingApprovalError extends ForgeError {
  readonly runId: string;
  /** The calls still waiting for a decision, in batch order. */
  readonly pending: PendingApproval[];
  /** Every call that waited, and the decisions taken so far (partial decisions stay here). */
  readonly approval: ApprovalState;
  /** The run's persisted snapshot, JSON: resume from it. */
  readonly snapshot: Snapshot<unknown>;
  /** What `resume` checks the snapshot against (see `ResumeOptions.meta`). */
  readonly meta: { workflow: string; definitionHash: string; machineVersion: number };
  constructor(init: {
    runId: string;
    approval: ApprovalState;
    pending: PendingApproval[];
    snapshot: Snapshot<unknown>;
    meta: AwaitingApprovalError["meta"];
  }) {
    super(
      `Run ${init.runId} waits for a person to approve or deny ${init.pending
        .map((call) => `${call.tool} (call ${call.callId})`)
        .join(
          ", ",
        )}. Resume it with the decisions: runner.resume(workflow, error.snapshot, { meta: error.meta, decisions }).`,
    );
    this.runId = init.runId;
    this.pending = init.pending;
    this.approval = init.approval;
    this.snapshot = init.snapshot;
    this.meta = init.meta;
  }
}
