/**
 * The validation decision for one LLM response: usable calls, text to retry, or unknown tools.
 * Pure; shared by ResponseValidator, the Guardrails facade and the workflow machine.
 */
import type { ToolSpec } from "../core/tools.ts";
import type { LLMResponse, ToolCall } from "../core/types.ts";
import { rescueToolCall } from "../prompts/rescue/index.ts";

/** What a response turned out to be. JSON-serializable. */
export type Verdict =
  | { kind: "calls"; calls: ToolCall[]; rescued: boolean }
  | { kind: "text"; raw: string }
  | { kind: "unknown_tools"; calls: ToolCall[]; unknown: string[]; raw: string };

/** Options of `validateResponse`. */
export interface ValidateOptions {
  toolNames: readonly string[];
  rescueEnabled: boolean;
  /** The tools' specs: rescued Qwen-Coder values are converted by their JSON Schemas (else strings). */
  tools?: readonly ToolSpec[];
}

/**
 * Classify a response. Text is rescued into calls when rescue is enabled and every rescued call
 * names a known tool; an empty call list counts as empty text.
 */
export function validateResponse(response: LLMResponse, options: ValidateOptions): Verdict {
  if (!Array.isArray(response)) {
    if (options.rescueEnabled) {
      const rescued = rescueToolCall(response.content, options.toolNames, {
        ...(options.tools && { tools: options.tools }),
      });
      if (rescued && rescued.length > 0) return { kind: "calls", calls: rescued, rescued: true };
    }
    return { kind: "text", raw: response.content };
  }
  if (response.length === 0) return { kind: "text", raw: "" };
  const known = new Set(options.toolNames);
  const unknown = [...new Set(response.filter((call) => !known.has(call.tool)).map((call) => call.tool))];
  if (unknown.length > 0)
    return { kind: "unknown_tools", calls: response, unknown, raw: JSON.stringify(response) };
  return { kind: "calls", calls: response, rescued: false };
}
