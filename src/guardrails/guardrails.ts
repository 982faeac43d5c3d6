/**
 * Guardrails: the two-call facade (`check` then `record`) for callers who run their own loop.
 */
import type { Prerequisite, ToolSpec } from "../core/tools.ts";
import type { LLMResponse, ToolCall } from "../core/types.ts";
import { decideResponse } from "./decisions.ts";
import { ErrorTracker } from "./error-tracker.ts";
import type { Nudge } from "./nudge.ts";
import { ResponseValidator, type RetryNudge } from "./response-validator.ts";
import { StepEnforcer } from "./step-enforcer.ts";

/** What the caller should do with a response. */
export type GuardrailAction = "execute" | "retry" | "tool_error" | "step_blocked" | "fatal";

/** Result of `Guardrails.check`. */
export interface GuardrailResult {
  action: GuardrailAction;
  /** The calls to run (action `execute`) or that were blocked (`tool_error`, `step_blocked`). */
  toolCalls?: ToolCall[];
  /**
   * Action `execute` with `earlyCalls: "hold"`: the calls held back from the batch (not in
   * `toolCalls`). Answer each of their ids with `nudge.content` on the tool channel.
   */
  held?: ToolCall[];
  nudge?: Nudge;
  /** Why the run must stop (action `fatal`). */
  reason?: string;
}

/** Options of `Guardrails`. */
export interface GuardrailsOptions {
  toolNames: readonly string[];
  terminalTool: string | readonly string[];
  requiredSteps?: readonly string[];
  toolPrerequisites?: Readonly<Record<string, readonly Prerequisite[]>>;
  maxRetries?: number;
  maxToolErrors?: number;
  maxPrematureAttempts?: number;
  maxPrereqViolations?: number;
  rescueEnabled?: boolean;
  retryNudge?: RetryNudge;
  /** The tools' specs: with them, a premature terminal call's nudge writes out the pending step's call. */
  tools?: readonly ToolSpec[];
  /**
   * `hold`: a batch whose early calls (a terminal call while steps are pending, a call before its
   * prerequisite) wait for its other calls is `execute` with those, and the early calls come back
   * as `held` with the reply to send them (docs/decisions/039-hold-early-calls.md). Default
   * `reject`: `step_blocked`.
   */
  earlyCalls?: "reject" | "hold";
}

/**
 * Validation, rescue, retry nudges and step enforcement behind two calls.
 * @example
 * const result = guardrails.check(response);
 * if (result.action === "retry" || result.action === "tool_error" || result.action === "step_blocked") {
 *   messages.push({ role: result.nudge!.role, content: result.nudge!.content }); // then ask again
 * } else if (result.action === "fatal") throw new Error(result.reason);
 * else { run(result.toolCalls!); done = guardrails.record(result.toolCalls!.map((c) => c.tool)); }
 */
export class Guardrails {
  readonly validator: ResponseValidator;
  readonly enforcer: StepEnforcer;
  readonly errors: ErrorTracker;
  readonly terminalTools: readonly string[];

  constructor(options: GuardrailsOptions) {
    this.terminalTools =
      typeof options.terminalTool === "string" ? [options.terminalTool] : [...options.terminalTool];
    const unknownTerminal = this.terminalTools.filter((tool) => !options.toolNames.includes(tool));
    if (unknownTerminal.length > 0) {
      throw new RangeError(`terminalTool ${unknownTerminal.join(", ")} is not in toolNames`);
    }
    this.validator = new ResponseValidator(options.toolNames, {
      rescueEnabled: options.rescueEnabled ?? true,
      ...(options.retryNudge !== undefined && { retryNudge: options.retryNudge }),
    });
    this.enforcer = new StepEnforcer({
      requiredSteps: options.requiredSteps ?? [],
      terminalTools: this.terminalTools,
      ...(options.toolPrerequisites && { toolPrerequisites: options.toolPrerequisites }),
      ...(options.maxPrematureAttempts !== undefined && {
        maxPrematureAttempts: options.maxPrematureAttempts,
      }),
      ...(options.maxPrereqViolations !== undefined && { maxPrereqViolations: options.maxPrereqViolations }),
      ...(options.tools !== undefined && { tools: options.tools }),
      ...(options.earlyCalls !== undefined && { earlyCalls: options.earlyCalls }),
    });
    this.errors = new ErrorTracker({
      ...(options.maxRetries !== undefined && { maxRetries: options.maxRetries }),
      ...(options.maxToolErrors !== undefined && { maxToolErrors: options.maxToolErrors }),
    });
  }

  /**
   * Decide what to do with one LLM response, with the same decision core as the workflow
   * machine (decisions.ts): the budgets count here, across calls.
   */
  check(response: LLMResponse): GuardrailResult {
    const decision = decideResponse(response, this.#rules, {
      consecutiveRetries: this.errors.retries,
      consecutiveToolErrors: this.errors.toolErrors,
    });
    switch (decision.kind) {
      case "retries_exhausted":
        this.errors.recordRetry();
        return {
          action: "fatal",
          reason: `Retries exhausted: ${decision.attempts} consecutive responses without a valid tool call`,
        };
      case "retry":
      case "unknown_tools": {
        this.errors.recordRetry();
        const { nudge } = this.validator.resultOf(decision);
        if (decision.kind === "retry") return { action: "retry", ...(nudge && { nudge }) };
        // The blocked calls: the caller answers each of their ids with the tool-channel nudge.
        return { action: "tool_error", toolCalls: decision.calls, ...(nudge && { nudge }) };
      }
      case "malformed_args_exhausted":
      case "malformed_args": {
        this.errors.resetRetries();
        this.errors.recordResult(false);
        if (decision.kind === "malformed_args_exhausted") {
          const [first] = decision.malformed;
          return {
            action: "fatal",
            toolCalls: decision.calls,
            reason: `Tool errors exhausted: the arguments of '${first?.tool}' were not a JSON object (${first?.reason})`,
          };
        }
        const { nudge } = this.validator.resultOf(decision);
        return { action: "tool_error", toolCalls: decision.calls, ...(nudge && { nudge }) };
      }
      case "accept":
        this.errors.resetRetries();
        return this.#enforce(decision.calls);
    }
  }

  #enforce(toolCalls: ToolCall[]): GuardrailResult {
    const hold = this.enforcer.hold(toolCalls);
    if (hold) return { action: "execute", toolCalls: hold.run, held: hold.held, nudge: hold.nudge };
    const step = this.enforcer.check(toolCalls);
    if (step.needsNudge && step.nudge) {
      if (this.enforcer.prematureExhausted) {
        return {
          action: "fatal",
          toolCalls,
          reason: `Step enforcement exhausted: terminal tool called ${this.enforcer.prematureAttempts} times with pending steps [${this.enforcer.pending().join(", ")}]`,
        };
      }
      return { action: "step_blocked", toolCalls, nudge: step.nudge };
    }
    const prerequisites = this.enforcer.checkPrerequisites(toolCalls);
    if (prerequisites.needsNudge && prerequisites.nudge) {
      if (this.enforcer.prereqExhausted) {
        return {
          action: "fatal",
          toolCalls,
          reason: `Prerequisites violated ${this.enforcer.prereqViolations} times in a row`,
        };
      }
      return { action: "step_blocked", toolCalls, nudge: prerequisites.nudge };
    }
    return { action: "execute", toolCalls };
  }

  get #rules() {
    return {
      toolNames: this.validator.toolNames,
      rescueEnabled: this.validator.rescueEnabled,
      maxRetriesPerStep: this.errors.maxRetries,
      maxToolErrors: this.errors.maxToolErrors,
    };
  }

  /**
   * Record the tools that ran successfully. Returns true once a terminal tool was recorded with
   * every required step satisfied: the caller's loop is done.
   */
  record(executedToolNames: readonly string[], args: readonly Record<string, unknown>[] = []): boolean {
    executedToolNames.forEach((name, index) => {
      this.enforcer.record(name, args[index] ?? {});
    });
    this.enforcer.resetPremature();
    this.enforcer.resetPrereqViolations();
    this.errors.resetErrors();
    return executedToolNames.some((name) => this.terminalTools.includes(name)) && this.enforcer.isSatisfied();
  }

  /**
   * Record a batch in which a tool failed. Returns a fatal result once the tool-error budget is
   * exhausted, null while the model may still correct itself.
   */
  recordToolError(toolName: string, error: unknown): GuardrailResult | null {
    this.errors.recordResult(false);
    if (!this.errors.toolErrorsExhausted) return null;
    const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return { action: "fatal", reason: `Tool errors exhausted: '${toolName}' failed (${detail})` };
  }

  /**
   * Record an executed batch the way the loop does, in one call: every call that succeeded becomes
   * a completed step; a batch in which a call failed (a `softError`, like ToolResolutionError, does
   * not count) adds one consecutive tool error and is `fatal` past the budget; a clean batch resets
   * the tool-error, premature and prerequisite streaks. `done` once a terminal tool succeeded with
   * every required step satisfied.
   * @example
   * const { done, fatal } = guardrails.recordBatch(results.map((r) => ({ tool: r.tool, args: r.args, ok: r.ok })));
   */
  recordBatch(outcomes: readonly BatchOutcome[]): { done: boolean; fatal: GuardrailResult | null } {
    for (const outcome of outcomes) if (outcome.ok) this.enforcer.record(outcome.tool, outcome.args ?? {});
    const failed = outcomes.find((outcome) => !outcome.ok && !outcome.softError);
    if (failed) {
      return { done: false, fatal: this.recordToolError(failed.tool, failed.error ?? "failed") };
    }
    this.enforcer.resetPremature();
    this.enforcer.resetPrereqViolations();
    this.errors.resetErrors();
    const terminal = outcomes.some((outcome) => outcome.ok && this.terminalTools.includes(outcome.tool));
    return { done: terminal && this.enforcer.isSatisfied(), fatal: null };
  }
}

/** One executed call, for `Guardrails.recordBatch`. */
export interface BatchOutcome {
  tool: string;
  args?: Record<string, unknown>;
  ok: boolean;
  /** A failure that does not count against the budget (the tool threw ToolResolutionError). */
  softError?: boolean;
  /** What the tool threw, for the fatal reason. */
  error?: unknown;
}
