/**
 * ResponseValidator: turns an LLM response into validated calls or a nudge. Stateless.
 */
import type { LLMResponse, ToolCall } from "../core/types.ts";
import { notRunNudge, retryNudge, unknownToolNudge } from "../prompts/nudges.ts";
import type { Nudge } from "./nudge.ts";
import { validateResponse } from "./validate-response.ts";

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

  /** Validate one response. */
  validate(response: LLMResponse): ValidationResult {
    const verdict = validateResponse(response, {
      toolNames: this.toolNames,
      rescueEnabled: this.rescueEnabled,
    });
    if (verdict.kind === "calls") return { toolCalls: verdict.calls, nudge: null, needsRetry: false };
    if (verdict.kind === "text") {
      return {
        toolCalls: null,
        nudge: {
          role: "user",
          content: buildRetryNudge(verdict.raw, this.#retryNudge, this.toolNames),
          kind: "retry",
          tier: 0,
        },
        needsRetry: true,
      };
    }
    const content = verdict.calls
      .map((call) =>
        verdict.unknown.includes(call.tool)
          ? unknownToolNudge(call.tool, this.toolNames)
          : notRunNudge(call.tool, `unknown tool ${verdict.unknown.map((name) => `'${name}'`).join(", ")}`),
      )
      .join("\n");
    return {
      toolCalls: null,
      nudge: { role: "tool", content, kind: "unknown_tool", tier: 0 },
      needsRetry: true,
    };
  }
}
