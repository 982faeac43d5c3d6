/**
 * ResponseValidator: turns an LLM response into validated calls or a nudge. Stateless.
 */
import type { LLMResponse, ToolCall } from "../core/types.ts";
import { retryNudge } from "../prompts/nudges.ts";
import { createGuardCounters, decideResponse, type ResponseDecision } from "./decisions.ts";
import type { Nudge } from "./nudge.ts";
import { rejectionReplies } from "./replies.ts";

/** Result of `ResponseValidator.validate`: exactly one of `toolCalls` and `nudge` is set. */
export interface ValidationResult {
  toolCalls: ToolCall[] | null;
  nudge: Nudge | null;
  needsRetry: boolean;
}

/** A custom retry nudge: fixed text, or built from the model's raw output. */
export type RetryNudge = string | ((rawResponse: string) => string);

/** Options of `ResponseValidator`. */
export interface ResponseValidatorOptions {
  rescueEnabled?: boolean;
  retryNudge?: RetryNudge;
}

/** Build the retry nudge text for a raw response, honouring a custom `retryNudge`. */
export function buildRetryNudge(
  rawResponse: string,
  custom?: RetryNudge,
  availableTools: readonly string[] = [],
): string {
  if (custom === undefined) return retryNudge(rawResponse, availableTools);
  return typeof custom === "string" ? custom : custom(rawResponse);
}

/**
 * Validates responses: rescues tool calls from text, rejects unknown tool names.
 * @example
 * const result = new ResponseValidator(["search", "answer"]).validate(response);
 * if (result.needsRetry) messages.push({ role: result.nudge!.role, content: result.nudge!.content });
 */
export class ResponseValidator {
  readonly toolNames: readonly string[];
  readonly rescueEnabled: boolean;
  readonly #retryNudge: RetryNudge | undefined;

  constructor(toolNames: readonly string[], options: ResponseValidatorOptions = {}) {
    this.toolNames = [...toolNames];
    this.rescueEnabled = options.rescueEnabled ?? true;
    this.#retryNudge = options.retryNudge;
  }

  /**
   * Validate one response: usable calls, or the nudge that answers it. Text gets a retry nudge
   * (user channel); a batch naming unknown tools gets an `unknown_tool` nudge and one with
   * undecodable arguments a `malformed_args` nudge (tool channel, one reply per call, joined).
   * An empty call list counts as empty text (docs/decisions/008-decision-core.md).
   */
  validate(response: LLMResponse): ValidationResult {
    // Stateless: budgets are the caller's (ErrorTracker), so the decision never reports exhaustion.
    const decision = decideResponse(response, this.#rules, createGuardCounters());
    return this.resultOf(decision);
  }

  /** The result for a decision already made (the Guardrails facade decides with its own counters). */
  resultOf(decision: ResponseDecision): ValidationResult {
    switch (decision.kind) {
      case "accept":
        return { toolCalls: decision.calls, nudge: null, needsRetry: false };
      case "retry":
      case "retries_exhausted":
        return {
          toolCalls: null,
          nudge: {
            role: "user",
            content: buildRetryNudge(decision.raw, this.#retryNudge, this.toolNames),
            kind: "retry",
            tier: 0,
          },
          needsRetry: true,
        };
      case "unknown_tools":
        return {
          toolCalls: null,
          nudge: {
            role: "tool",
            content: rejectionReplies(decision, this.toolNames).join("\n"),
            kind: "unknown_tool",
            tier: 0,
          },
          needsRetry: true,
        };
      case "malformed_args":
      case "malformed_args_exhausted":
        return {
          toolCalls: null,
          nudge: {
            role: "tool",
            content: rejectionReplies(decision, this.toolNames).join("\n"),
            kind: "malformed_args",
            tier: 0,
          },
          needsRetry: true,
        };
    }
  }

  get #rules() {
    return {
      toolNames: this.toolNames,
      rescueEnabled: this.rescueEnabled,
      maxRetriesPerStep: Number.POSITIVE_INFINITY,
      maxToolErrors: Number.POSITIVE_INFINITY,
    };
  }
}
