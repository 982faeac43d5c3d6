/**
 * A node-llama-cpp chat response → `LLMResponse`: grammar-made function calls in functions mode,
 * rescued calls or text in free mode.
 */
import type { ChatModelFunctions, LlamaChatResponse } from "node-llama-cpp";
import { type ToolSpec, toolJsonSchema } from "../../core/tools.ts";
import type { LLMResponse, ToolCall } from "../../core/types.ts";
import { rescueToolCall } from "../../prompts/rescue/index.ts";
import { withReasoning } from "../openai/wire.ts";
import { isPlainObject } from "../wire.ts";
import { dropOmittedOptionals } from "./schema.ts";

/** How the tools reached the model: the grammar (functions) or only the prompt (free). */
export type LlamaCppMode = "functions" | "free";

/**
 * Read a generation as an `LLMResponse`.
 * - functions mode: each function call becomes a `ToolCall` (grammar `null`s for left-out optional
 *   arguments removed); text before the calls and thought segments become the first call's reasoning.
 * - free mode: `rescueToolCall` on the text (all or nothing, known tools only), thoughts as reasoning.
 * Anything else is a `TextResponse` holding exactly the text the model wrote, so the loop's rescue
 * and retry nudges see what came back.
 */
export function toLLMResponse(
  result: LlamaChatResponse<ChatModelFunctions>,
  tools: readonly ToolSpec[],
  mode: LlamaCppMode,
): LLMResponse {
  const thoughts = result.fullResponse
    .flatMap((item) => (typeof item !== "string" && item.segmentType === "thought" ? [item.text.trim()] : []))
    .join("\n\n");
  const functionCalls = result.functionCalls ?? [];
  if (mode === "functions" && functionCalls.length > 0) {
    const specs = new Map(tools.map((tool) => [tool.name, tool]));
    const calls: ToolCall[] = functionCalls.map((call) => {
      const spec = specs.get(call.functionName);
      const args = spec ? dropOmittedOptionals(call.params, toolJsonSchema(spec)) : call.params;
      return { tool: call.functionName, args: isPlainObject(args) ? args : {} };
    });
    return withReasoning(calls, [thoughts, result.response]);
  }
  if (mode === "free") {
    const rescued = rescueToolCall(
      result.response,
      tools.map((tool) => tool.name),
      { tools },
    );
    if (rescued) return withReasoning(rescued, [thoughts]);
  }
  return { content: result.response };
}
