/**
 * `SendOptions.toolChoice` in each backend's wire shape. Pure: the clients call these per request.
 */
import type { ToolChoice } from "../core/types.ts";

/**
 * OpenAI's `tool_choice`: `"auto"`, `"required"`, `"none"`, or
 * `{type: "function", function: {name}}` for one tool (llama-server accepts the same).
 * @example
 * openAIToolChoice({ name: "get_weather" }) // { type: "function", function: { name: "get_weather" } }
 */
export function openAIToolChoice(choice: ToolChoice): string | Record<string, unknown> {
  return typeof choice === "string" ? choice : { type: "function", function: { name: choice.name } };
}

/**
 * Anthropic's `tool_choice`: `{type: "auto"}`, `{type: "any"}` for a required call,
 * `{type: "none"}`, or `{type: "tool", name}` for one tool.
 */
export function anthropicToolChoice(
  choice: ToolChoice,
): { type: "auto" } | { type: "any" } | { type: "none" } | { type: "tool"; name: string } {
  if (typeof choice !== "string") return { type: "tool", name: choice.name };
  return choice === "required" ? { type: "any" } : { type: choice };
}
