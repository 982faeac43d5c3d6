/**
 * Prompt-injected tool calling for backends without native function calling: the tool prompt goes
 * into the system message and the history is rewritten into plain user/assistant text.
 */
import type { ToolSpec } from "../core/tools.ts";
import { buildToolPrompt } from "../prompts/tool-prompt.ts";
import { decodeArguments, isPlainObject, wireText } from "./wire.ts";

type WireMessage = Record<string, unknown>;

/**
 * Rewrite OpenAI-shaped `messages` for a backend that only understands plain chat:
 * 1. `buildToolPrompt(tools)` is appended to the first system message (or becomes one);
 * 2. `role: "tool"` results become user text `[Tool result for <name>] <content>`;
 * 3. assistant `tool_calls` become the `{"tool": …, "args": …}` JSON the tool prompt asks for, so
 *    the history doubles as few-shot examples;
 * 4. consecutive messages of the same role are merged, for strict user/assistant alternation
 *    (chat templates such as Mistral's count only plain alternating turns).
 * The input is not mutated.
 */
export function toPromptModeMessages(
  messages: readonly WireMessage[],
  tools: readonly ToolSpec[],
): WireMessage[] {
  const downgraded = messages.map(downgradeMessage);
  const toolPrompt = buildToolPrompt([...tools]);
  const withPrompt = toolPrompt.length > 0 ? injectToolPrompt(downgraded, toolPrompt) : downgraded;
  return mergeConsecutiveRoles(withPrompt);
}

/** One message as plain text: tool results as user text, tool calls as the prompt's JSON format. */
export function downgradeMessage(message: WireMessage): WireMessage {
  const content = wireText(message.content);
  if (message.role === "tool") {
    const name = typeof message.name === "string" ? message.name : message.tool_name;
    const label = typeof name === "string" && name.length > 0 ? `[Tool result for ${name}]` : "[Tool result]";
    return { role: "user", content: `${label} ${content}` };
  }
  if (message.role === "assistant" && Array.isArray(message.tool_calls) && message.tool_calls.length > 0) {
    const calls = message.tool_calls.map(callAsPromptJson);
    const json = JSON.stringify(calls.length === 1 ? calls[0] : calls);
    return { role: "assistant", content: content.trim().length > 0 ? `${content}\n\n${json}` : json };
  }
  return { role: message.role, content };
}

function callAsPromptJson(call: unknown): { tool: string; args: Record<string, unknown> } {
  const fn = isPlainObject(call) && isPlainObject(call.function) ? call.function : {};
  const name = typeof fn.name === "string" ? fn.name : "";
  return { tool: name, args: decodeArguments(fn.arguments) ?? {} };
}

function injectToolPrompt(messages: WireMessage[], toolPrompt: string): WireMessage[] {
  const systemIndex = messages.findIndex((message) => message.role === "system");
  if (systemIndex === -1) return [{ role: "system", content: toolPrompt }, ...messages];
  return messages.map((message, index) =>
    index === systemIndex
      ? { ...message, content: joinText(wireText(message.content), toolPrompt) }
      : message,
  );
}

/** Merge runs of same-role messages into one, joining their text with a blank line. */
export function mergeConsecutiveRoles(messages: readonly WireMessage[]): WireMessage[] {
  const merged: WireMessage[] = [];
  for (const message of messages) {
    const previous = merged.at(-1);
    if (previous && previous.role === message.role) {
      merged[merged.length - 1] = {
        ...previous,
        content: joinText(wireText(previous.content), wireText(message.content)),
      };
    } else {
      merged.push({ ...message });
    }
  }
  return merged;
}

function joinText(first: string, second: string): string {
  return [first, second].filter((part) => part.trim().length > 0).join("\n\n");
}
