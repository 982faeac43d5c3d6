/**
 * The validation decision for one LLM response: usable calls, text to retry, or unknown tools.
 * Pure; shared by ResponseValidator, the Guardrails facade and the workflow machine.
 */

import { type ResolvedToolName, resolveToolName } from "../core/tool-names.ts";
import type { ToolSpec } from "../core/tools.ts";
import type { LLMResponse, ToolCall } from "../core/types.ts";
import type { TemplateCallFormat } from "../prompts/chat-template.ts";
import { rescueWithNames } from "../prompts/rescue/index.ts";

/** What a response turned out to be. JSON-serializable. */
export type Verdict =
  | { kind: "calls"; calls: ToolCall[]; rescued: boolean; renamed?: number }
  | { kind: "text"; raw: string }
  | { kind: "unknown_tools"; calls: ToolCall[]; unknown: string[]; raw: string };

/** Options of `validateResponse`. */
export interface ValidateOptions {
  toolNames: readonly string[];
  rescueEnabled: boolean;
  /** The tools' specs: rescued Qwen-Coder values are converted by their JSON Schemas (else strings). */
  tools?: readonly ToolSpec[];
  /** How the model writes a call, read from its chat template: rescued first (`RescueOptions.callFormat`). */
  callFormat?: TemplateCallFormat | undefined;
}

/**
 * Classify a response. Text is rescued into calls when rescue is enabled and every rescued call
 * names a known tool; an empty call list counts as empty text. A name that is a near miss of
 * exactly one offered tool (`resolveToolName`: case, `.`/`-` for `_`, a namespace prefix missing
 * or extra) is that tool's, native or rescued, and counted in `renamed`.
 */
export function validateResponse(response: LLMResponse, options: ValidateOptions): Verdict {
  if (!Array.isArray(response)) {
    if (options.rescueEnabled) {
      const rescued = rescueWithNames(response.content, options.toolNames, {
        ...(options.tools && { tools: options.tools }),
        ...(options.callFormat && { callFormat: options.callFormat }),
      });
      if (rescued && rescued.calls.length > 0) {
        return { kind: "calls", calls: rescued.calls, rescued: true, ...renamedField(rescued.renamed) };
      }
    }
    return { kind: "text", raw: response.content };
  }
  if (response.length === 0) return { kind: "text", raw: "" };
  const resolved = response.map((call) => resolveToolName(call.tool, options.toolNames));
  const unknown = [
    ...new Set(response.filter((_, index) => resolved[index] === null).map((call) => call.tool)),
  ];
  if (unknown.length > 0)
    return { kind: "unknown_tools", calls: response, unknown, raw: JSON.stringify(response) };
  let renamed = 0;
  const calls = response.map((call, index) => {
    const name = resolved[index] as ResolvedToolName;
    if (name.match === "exact") return call;
    renamed += 1;
    return { ...call, tool: name.name };
  });
  return { kind: "calls", calls, rescued: false, ...renamedField(renamed) };
}

function renamedField(renamed: number): { renamed?: number } {
  return renamed > 0 ? { renamed } : {};
}
