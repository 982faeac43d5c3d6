/**
 * The decision core: what the loop does next with a response, with an accepted batch and with
 * an executed batch. Pure functions of the response, the run's rules and its counters; the
 * workflow machine stores their result in its context once per pass and its actions only apply
 * it, and the middleware classes (Guardrails, StepEnforcer, ResponseValidator) call the same
 * functions, so the two surfaces cannot drift apart.
 */
import type { Prerequisite, ToolSpec } from "../core/tools.ts";
import type { LLMResponse, ToolCall } from "../core/types.ts";
import type { TemplateCallFormat } from "../prompts/chat-template.ts";
import { showsCallAttempt } from "../prompts/rescue/call-attempt.ts";
import type { GuardLimits } from "./limits.ts";
import {
  findPrematureTerminal,
  findPrerequisiteViolations,
  type PrerequisiteViolation,
  pendingSteps,
  recordStep,
  type StepProgress,
} from "./step-state.ts";
import { validateResponse } from "./validate-response.ts";

/** The rules of a run the decisions read. JSON-serializable (the machine keeps them in its config). */
export interface GuardRules extends Omit<GuardLimits, "maxIterations"> {
  toolNames: readonly string[];
  requiredSteps: readonly string[];
  terminalTools: readonly string[];
  prerequisites: Readonly<Record<string, readonly Prerequisite[]>>;
  rescueEnabled: boolean;
  /** Off: premature terminal calls and unmet prerequisites are not checked (ablation). */
  stepEnforcement: boolean;
  /**
   * `hold`: calls written before what they need (a terminal call while steps are pending, a call
   * before its prerequisite) are held back while the rest of their batch runs, when that rest gives
   * what they wait for (docs/decisions/039-hold-early-calls.md). `reject` or absent: the whole
   * batch is rejected.
   */
  earlyCalls?: "reject" | "hold";
  /**
   * The prose policy (docs/decisions/024-prose-policy.md): the tool a text answer that shows no sign
   * of a call attempt (`showsCallAttempt`) is accepted as, with the text as its `message` — the
   * proxy's `respond` when the client lets the model answer in text (`tool_choice: auto`). Absent:
   * every text answer is nudged.
   */
  proseAnswerTool?: string;
  /**
   * How the model writes a call, read from its chat template (`callFormatFromTemplate`): the rescue
   * reads it before the built-in formats (docs/decisions/035-call-format-from-the-chat-template.md).
   */
  callFormat?: TemplateCallFormat;
}

/** Consecutive-failure counters, each reset by the success that ends its streak. */
export interface GuardCounters {
  consecutiveRetries: number;
  consecutiveToolErrors: number;
  prematureAttempts: number;
  prereqViolations: number;
}

/** Counters plus step progress: everything a decision reads besides the rules. */
export interface GuardState extends GuardCounters {
  progress: StepProgress;
}

/** Fresh counters. */
export function createGuardCounters(): GuardCounters {
  return { consecutiveRetries: 0, consecutiveToolErrors: 0, prematureAttempts: 0, prereqViolations: 0 };
}

/** A call of a batch whose arguments could not be decoded into a JSON object. */
export interface MalformedCall {
  /** Position in the batch. */
  index: number;
  tool: string;
  /** What was wrong, as the client reported it. */
  reason: string;
}

/**
 * What to do with a response. `attempt(s)` is the consecutive count of the failure's kind,
 * this one included.
 */
export type ResponseDecision =
  /**
   * Known tools with decodable arguments: go on to enforcement. `renamed`: calls whose name was a
   * near miss of an offered tool. `prose`: a text answer accepted by the prose policy.
   */
  | { kind: "accept"; calls: ToolCall[]; rescued: boolean; renamed?: number; prose?: true }
  /** Text that is not a usable call: answer on the user channel with a retry nudge. */
  | { kind: "retry"; raw: string; attempt: number }
  /** The batch names tools that do not exist: reject it on the tool channel. */
  | { kind: "unknown_tools"; calls: ToolCall[]; unknown: string[]; raw: string; attempt: number }
  /** The batch has calls whose arguments are not a JSON object: reject it on the tool channel. */
  | { kind: "malformed_args"; calls: ToolCall[]; malformed: MalformedCall[]; attempt: number }
  /** One retry more than `maxRetriesPerStep`: the run fails with ToolCallError. */
  | { kind: "retries_exhausted"; raw: string; attempts: number; wasText: boolean }
  /** Malformed arguments once more than `maxToolErrors` allows: the run fails with ToolExecutionError. */
  | { kind: "malformed_args_exhausted"; calls: ToolCall[]; malformed: MalformedCall[]; attempts: number };

/**
 * A call of a batch held back while the batch's other calls run (ADR 039): it was written before a
 * result it needs existed, and the call that gives that result is in the same batch.
 */
export interface HeldCall {
  /** Position in the batch. */
  index: number;
  /**
   * `premature`: a terminal call while required steps are pending (the batch runs one of them);
   * `prerequisite`: a call whose prerequisites the batch's other calls give.
   */
  kind: "premature" | "prerequisite";
  /** The required steps pending before the batch, or the prerequisites missing before it. */
  waitsFor: string[];
}

/** What to do with an accepted batch. */
export type EnforceDecision =
  /** Run the batch; `held`: calls answered with a note instead, to come again later (ADR 039). */
  | { kind: "execute"; calls: ToolCall[]; held?: HeldCall[] }
  /** A terminal call while required steps are pending: reject with an escalating step nudge. */
  | {
      kind: "premature";
      calls: ToolCall[];
      terminalTool: string;
      pending: string[];
      tier: number;
      attempt: number;
    }
  | {
      kind: "premature_exhausted";
      calls: ToolCall[];
      terminalTool: string;
      pending: string[];
      tier: number;
      attempts: number;
    }
  /** Calls whose prerequisites are unmet (before the batch): reject the batch. */
  | { kind: "prerequisite"; calls: ToolCall[]; violations: PrerequisiteViolation[]; attempt: number }
  | {
      kind: "prerequisite_exhausted";
      calls: ToolCall[];
      violations: PrerequisiteViolation[];
      attempts: number;
    };

/** Every decision the loop stores. */
export type Decision = ResponseDecision | EnforceDecision | BatchDecision;

/** Highest escalation tier of step nudges. */
export const MAX_STEP_TIER = 3;

/** True when `count` consecutive failures exceed a budget of `max`. */
export function isBudgetExceeded(count: number, max: number): boolean {
  return count > max;
}

/** The malformed calls of a batch (none for text). */
export function malformedCalls(calls: readonly ToolCall[]): MalformedCall[] {
  const malformed: MalformedCall[] = [];
  calls.forEach((call, index) => {
    if (call.argumentsError !== undefined)
      malformed.push({ index, tool: call.tool, reason: call.argumentsError });
  });
  return malformed;
}

/**
 * Decide what a response leads to: accepted calls, a retry nudge, a rejected batch, or an
 * exhausted budget. Unknown tools are checked before malformed arguments (a wrong name makes
 * the arguments moot). `tools`: the specs rescued Qwen-Coder values are converted by.
 */
export function decideResponse(
  response: LLMResponse,
  rules: Pick<
    GuardRules,
    "toolNames" | "rescueEnabled" | "maxRetriesPerStep" | "maxToolErrors" | "proseAnswerTool" | "callFormat"
  >,
  state: Pick<GuardCounters, "consecutiveRetries" | "consecutiveToolErrors">,
  tools?: readonly ToolSpec[],
): ResponseDecision {
  const verdict = validateResponse(response, {
    toolNames: rules.toolNames,
    rescueEnabled: rules.rescueEnabled,
    ...(tools && { tools }),
    ...(rules.callFormat && { callFormat: rules.callFormat }),
  });
  if (verdict.kind === "calls") {
    const malformed = malformedCalls(verdict.calls);
    if (malformed.length === 0) {
      const renamed = verdict.renamed ? { renamed: verdict.renamed } : {};
      return { kind: "accept", calls: verdict.calls, rescued: verdict.rescued, ...renamed };
    }
    const attempt = state.consecutiveToolErrors + 1;
    return isBudgetExceeded(attempt, rules.maxToolErrors)
      ? { kind: "malformed_args_exhausted", calls: verdict.calls, malformed, attempts: attempt }
      : { kind: "malformed_args", calls: verdict.calls, malformed, attempt };
  }
  const prose = proseAnswer(verdict, rules);
  if (prose) return prose;
  const attempt = state.consecutiveRetries + 1;
  if (isBudgetExceeded(attempt, rules.maxRetriesPerStep)) {
    return {
      kind: "retries_exhausted",
      raw: verdict.raw,
      attempts: attempt,
      wasText: verdict.kind === "text",
    };
  }
  return verdict.kind === "text"
    ? { kind: "retry", raw: verdict.raw, attempt }
    : { kind: "unknown_tools", calls: verdict.calls, unknown: verdict.unknown, raw: verdict.raw, attempt };
}

/**
 * The prose policy: a non-empty text answer with no sign of a call attempt, accepted as a call of
 * `rules.proseAnswerTool` carrying the text; null when the policy is off or the text shows a sign.
 */
export function proseAnswer(
  verdict: ReturnType<typeof validateResponse>,
  rules: Pick<GuardRules, "toolNames" | "proseAnswerTool">,
): Extract<ResponseDecision, { kind: "accept" }> | null {
  const tool = rules.proseAnswerTool;
  if (tool === undefined || verdict.kind !== "text" || verdict.raw.trim().length === 0) return null;
  if (showsCallAttempt(verdict.raw, rules.toolNames, [tool])) return null;
  return { kind: "accept", calls: [{ tool, args: { message: verdict.raw } }], rescued: false, prose: true };
}

/**
 * Decide whether an accepted batch runs: with `earlyCalls: "hold"`, its early calls are held back
 * when the rest of the batch gives what they wait for ({@link findHeldCalls}); otherwise premature
 * terminal calls first, then prerequisites.
 */
export function decideEnforcement(calls: ToolCall[], rules: GuardRules, state: GuardState): EnforceDecision {
  if (!rules.stepEnforcement) return { kind: "execute", calls };
  const held = findHeldCalls(calls, rules, state);
  if (held) return { kind: "execute", calls, held };
  return (
    decidePremature(calls, rules, state) ??
    decidePrerequisites(calls, rules, state) ?? { kind: "execute", calls }
  );
}

/**
 * With `earlyCalls: "hold"`, the calls of a batch to hold back while the rest runs; null when
 * nothing is held (then the batch is judged as without the option). A call is early when it is a
 * terminal call while required steps are pending, or its prerequisites are unmet before the batch.
 * The batch is split only when every early call waits for something the batch itself runs: a
 * premature terminal call needs a pending step among the calls that run, a call with unmet
 * prerequisites needs them met by those calls (as if they succeed; arg-matched ones with the same
 * value). Otherwise the batch is rejected as before, so a hold always runs a call that makes
 * progress and cannot repeat without end.
 */
export function findHeldCalls(
  calls: readonly ToolCall[],
  rules: Pick<GuardRules, "terminalTools" | "requiredSteps" | "prerequisites" | "earlyCalls">,
  state: Pick<GuardState, "progress">,
): HeldCall[] | null {
  if (rules.earlyCalls !== "hold") return null;
  const pending = pendingSteps(rules.requiredSteps, state.progress);
  const early = calls.map((call, index): HeldCall | null => {
    if (pending.length > 0 && rules.terminalTools.includes(call.tool))
      return { index, kind: "premature", waitsFor: pending };
    const [violation] = findPrerequisiteViolations([call], rules.prerequisites, state.progress);
    return violation ? { index, kind: "prerequisite", waitsFor: violation.missing } : null;
  });
  const held = early.filter((entry): entry is HeldCall => entry !== null);
  if (held.length === 0) return null;
  const runs = calls.filter((_, index) => early[index] === null);
  if (runs.length === 0) return null;
  if (held.some((entry) => entry.kind === "premature") && !runs.some((call) => pending.includes(call.tool)))
    return null;
  const after = runs.reduce((progress, call) => recordStep(progress, call.tool, call.args), state.progress);
  const waiting = held
    .filter((entry) => entry.kind === "prerequisite")
    .map((entry) => calls[entry.index] as ToolCall);
  if (findPrerequisiteViolations(waiting, rules.prerequisites, after).length > 0) return null;
  return held;
}

/** The calls of a batch that run: all but the held ones. */
export function runnableCalls(calls: readonly ToolCall[], held: readonly HeldCall[] | undefined): ToolCall[] {
  return held ? calls.filter((_, index) => !held.some((entry) => entry.index === index)) : [...calls];
}

/** The step check alone: a premature terminal call's decision, or null when there is none. */
export function decidePremature(
  calls: ToolCall[],
  rules: Pick<GuardRules, "terminalTools" | "requiredSteps" | "maxPrematureAttempts">,
  state: Pick<GuardState, "progress" | "prematureAttempts">,
): Extract<EnforceDecision, { kind: "premature" | "premature_exhausted" }> | null {
  const premature = findPrematureTerminal(calls, rules.terminalTools, rules.requiredSteps, state.progress);
  if (!premature) return null;
  const attempt = state.prematureAttempts + 1;
  const { terminalTool, pending } = premature;
  const tier = Math.min(attempt, MAX_STEP_TIER);
  return isBudgetExceeded(attempt, rules.maxPrematureAttempts)
    ? { kind: "premature_exhausted", calls, terminalTool, pending, tier, attempts: attempt }
    : { kind: "premature", calls, terminalTool, pending, tier, attempt };
}

/** The prerequisite check alone: the decision for unmet prerequisites, or null when all are met. */
export function decidePrerequisites(
  calls: ToolCall[],
  rules: Pick<GuardRules, "prerequisites" | "maxPrereqViolations">,
  state: Pick<GuardState, "progress" | "prereqViolations">,
): Extract<EnforceDecision, { kind: "prerequisite" | "prerequisite_exhausted" }> | null {
  const violations = findPrerequisiteViolations(calls, rules.prerequisites, state.progress);
  if (violations.length === 0) return null;
  const attempt = state.prereqViolations + 1;
  return isBudgetExceeded(attempt, rules.maxPrereqViolations)
    ? { kind: "prerequisite_exhausted", calls, violations, attempts: attempt }
    : { kind: "prerequisite", calls, violations, attempt };
}

/**
 * The counters after a decision: a failure sets its streak to its attempt number; an accepted
 * batch ends the retry streak. (A clean executed batch resets the rest: {@link countersAfterBatch}.)
 */
export function countersAfter(counters: GuardCounters, decision: Decision): GuardCounters {
  switch (decision.kind) {
    case "accept":
      return { ...counters, consecutiveRetries: 0 };
    case "retry":
    case "unknown_tools":
      return { ...counters, consecutiveRetries: decision.attempt };
    case "retries_exhausted":
      return { ...counters, consecutiveRetries: decision.attempts };
    case "malformed_args":
      return { ...counters, consecutiveRetries: 0, consecutiveToolErrors: decision.attempt };
    case "malformed_args_exhausted":
      return { ...counters, consecutiveRetries: 0, consecutiveToolErrors: decision.attempts };
    case "premature":
      return { ...counters, prematureAttempts: decision.attempt };
    case "premature_exhausted":
      return { ...counters, prematureAttempts: decision.attempts };
    case "prerequisite":
      return { ...counters, prereqViolations: decision.attempt };
    case "prerequisite_exhausted":
      return { ...counters, prereqViolations: decision.attempts };
    case "execute":
    case "finish":
    case "continue":
    case "tool_errors_exhausted":
      // The batch decisions read counters already updated by countersAfterBatch.
      return counters;
  }
}

/**
 * The counters after an executed batch: a failing call (not a ToolResolutionError) adds one
 * consecutive tool error; a clean batch resets tool errors, premature attempts and
 * prerequisite violations.
 */
export function countersAfterBatch(counters: GuardCounters, batchFailed: boolean): GuardCounters {
  return batchFailed
    ? { ...counters, consecutiveToolErrors: counters.consecutiveToolErrors + 1 }
    : { ...counters, consecutiveToolErrors: 0, prematureAttempts: 0, prereqViolations: 0 };
}

/** The outcome of one executed call, as the batch decision reads it. */
export interface CallOutcome {
  callId?: string;
  tool: string;
  /** `denied`: a person denied the call (it never ran); like `resolution_error`, not a failure. */
  status: "ok" | "resolution_error" | "error" | "denied";
  value?: unknown;
  errorName?: string;
  errorMessage?: string;
}

/** What an executed batch leads to. */
export type BatchDecision =
  /** A terminal tool succeeded: the run is done with its value. */
  | { kind: "finish"; result: unknown }
  | { kind: "continue" }
  /** The batch failed once more than `maxToolErrors` allows: ToolExecutionError. */
  | {
      kind: "tool_errors_exhausted";
      toolName: string;
      callId?: string;
      errorName: string;
      errorMessage: string;
      attempts: number;
    };

/**
 * Decide what an executed batch leads to, given the counters after it
 * ({@link countersAfterBatch}): an exhausted tool-error budget wins over a terminal success in
 * the same batch.
 */
export function decideBatch(
  outcomes: readonly CallOutcome[],
  rules: Pick<GuardRules, "terminalTools" | "maxToolErrors">,
  counters: Pick<GuardCounters, "consecutiveToolErrors">,
): BatchDecision {
  const failed = outcomes.find((outcome) => outcome.status === "error");
  if (failed && isBudgetExceeded(counters.consecutiveToolErrors, rules.maxToolErrors)) {
    return {
      kind: "tool_errors_exhausted",
      toolName: failed.tool,
      ...(failed.callId !== undefined && { callId: failed.callId }),
      errorName: failed.errorName ?? "Error",
      errorMessage: failed.errorMessage ?? "",
      attempts: counters.consecutiveToolErrors,
    };
  }
  const terminal = outcomes.find(
    (outcome) => outcome.status === "ok" && rules.terminalTools.includes(outcome.tool),
  );
  return terminal ? { kind: "finish", result: terminal.value ?? null } : { kind: "continue" };
}

/** A batch failed: some call threw (a ToolResolutionError does not count). */
export function batchFailed(outcomes: readonly CallOutcome[]): boolean {
  return outcomes.some((outcome) => outcome.status === "error");
}
