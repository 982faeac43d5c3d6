/**
 * Tool calling by prompt, for clients whose backend has no native function calling: the system
 * prompt section that describes the tools and the answer format, and the extraction of calls.
 */
import { type ToolSpec, toolJsonSchema } from "../core/tools.ts";
import type { ToolCall } from "../core/types.ts";
import { type RescueOptions, rescueToolCall } from "./rescue/index.ts";

/**
 * The prompt section that lists `tools` (name, description, JSON Schema of the parameters) and
 * states the one answer format `extractToolCall` expects: a single JSON object
 * `{"tool": "<name>", "args": {...}}` and nothing else, or a JSON array of them for several calls.
 * Empty when there are no tools, since there is then nothing to call.
 * @example
 * const system = `${workflowPrompt}\n\n${buildToolPrompt(tools.map((tool) => tool.spec))}`;
 */
export function buildToolPrompt(tools: ToolSpec[]): string {
  if (tools.length === 0) return "";
  const descriptions = tools.map(describeTool).join("\n\n");
  return [
    "You have access to the following tools:",
    descriptions,
    [
      "To call a tool, reply with a single JSON object and nothing else:",
      '{"tool": "<tool name>", "args": {<arguments matching the tool\'s parameters>}}',
    ].join("\n"),
    [
      "To call several tools at once, reply with a JSON array of such objects and nothing else:",
      '[{"tool": "<tool name>", "args": {...}}, {"tool": "<tool name>", "args": {...}}]',
    ].join("\n"),
    'Use only the tool names listed above. "args" must be a JSON object, even when empty: {}. ' +
      "Do not wrap the JSON in code fences and do not write any text before or after it.",
  ].join("\n\n");
}

function describeTool(tool: ToolSpec): string {
  const lines = [`## ${tool.name}`];
  if (tool.description.trim().length > 0) lines.push(tool.description.trim());
  lines.push(`Parameters (JSON Schema): ${JSON.stringify(toolJsonSchema(tool))}`);
  return lines.join("\n");
}

/**
 * Extract the tool calls from a prompt-mode answer; `null` when it holds none.
 *
 * Delegates to `rescueToolCall`: the format `buildToolPrompt` asks for is bare JSON, which rescue
 * reads, and a model that drifts into its native format (`<tool_call>`, `[TOOL_CALLS]`, a fenced
 * block, …) is still understood. The same all-or-nothing rules apply: a broken call or one naming
 * a tool not in `toolNames` gives `null`. With `options.tools`, Qwen-Coder text values are converted
 * by the tools' JSON Schemas.
 * @example
 * extractToolCall('{"tool": "get_weather", "args": {"city": "Paris"}}', ["get_weather"])
 * // [{ tool: "get_weather", args: { city: "Paris" } }]
 */
export function extractToolCall(
  text: string,
  toolNames: readonly string[],
  options: RescueOptions = {},
): ToolCall[] | null {
  return rescueToolCall(text, toolNames, options);
}
