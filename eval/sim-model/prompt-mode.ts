/**
 * The sim-model in prompt mode: a request without `tools` carries the tool prompt in its system
 * message and a history of plain text (calls as `{"tool", "args"}` JSON, results as
 * `[Tool result for <name>] …` user text). The history is read back into native shapes so the
 * reference position is found the same way, and calls are answered in the JSON the prompt asks for.
 */
import type { SimCall } from "./turn.ts";
import { textOf, type WireMessage } from "./wire.ts";

const RESULT_LABEL = /^\[Tool result(?: for ([^\]]+))?\] ?/;

/** What the tool prompt (`buildToolPrompt`) asks for, as its system message carries it. */
const TOOL_PROMPT_MARK = '{"tool": "<tool name>", "args":';

/**
 * Whether a request asks for prompt-injected tools: it offers no native `tools` and its system
 * message carries this library's tool prompt (prompt mode of `OpenAICompatibleClient`).
 */
export function isPromptModeRequest(
  tools: readonly unknown[] | undefined,
  messages: readonly WireMessage[],
): boolean {
  if (tools !== undefined && tools.length > 0) return false;
  const system = messages.find((message) => message.role === "system");
  return system !== undefined && textOf(system).includes(TOOL_PROMPT_MARK);
}

/**
 * A prompt-mode history in native shapes: assistant JSON calls become `tool_calls`, and each
 * `[Tool result …]` paragraph of a user message becomes the `tool` message of the next pending call.
 * @example
 * fromPromptMode([{ role: "assistant", content: '{"tool":"get","args":{}}' }, { role: "user", content: "[Tool result for get] {}" }])
 * // [{ role: "assistant", content: "", tool_calls: [{ id: "prompt_0", … }] }, { role: "tool", tool_call_id: "prompt_0", content: "{}" }]
 */
export function fromPromptMode(messages: readonly WireMessage[]): WireMessage[] {
  const upgraded: WireMessage[] = [];
  const pending: { id: string; name: string }[] = [];
  let nextId = 0;
  for (const message of messages) {
    const text = textOf(message);
    if (message.role === "assistant") {
      const found = callsInText(text);
      if (!found) {
        upgraded.push(message);
        continue;
      }
      const toolCalls = found.calls.map((call) => {
        const id = `prompt_${nextId++}`;
        pending.push({ id, name: call.name });
        return {
          id,
          type: "function",
          function: { name: call.name, arguments: JSON.stringify(call.arguments) },
        };
      });
      upgraded.push({ role: "assistant", content: found.prose, tool_calls: toolCalls });
      continue;
    }
    if (message.role !== "user") {
      upgraded.push(message);
      continue;
    }
    const prose: string[] = [];
    for (const paragraph of text.split("\n\n")) {
      const label = RESULT_LABEL.exec(paragraph);
      const index = label ? pending.findIndex((call) => !label[1] || call.name === label[1]) : -1;
      if (!label || index < 0) {
        prose.push(paragraph);
        continue;
      }
      const [call] = pending.splice(index, 1);
      upgraded.push({
        role: "tool",
        tool_call_id: (call as { id: string }).id,
        content: paragraph.slice(label[0].length),
      });
    }
    if (prose.length > 0) upgraded.push({ role: "user", content: prose.join("\n\n") });
  }
  return upgraded;
}

/** The calls an assistant text holds as the prompt's JSON (its last paragraph), with the text before it. */
function callsInText(text: string): { calls: SimCall[]; prose: string } | null {
  const cut = text.lastIndexOf("\n\n");
  const json = cut < 0 ? text : text.slice(cut + 2);
  let value: unknown;
  try {
    value = JSON.parse(json.trim());
  } catch {
    return null;
  }
  const items = Array.isArray(value) ? value : [value];
  const calls: SimCall[] = [];
  for (const item of items) {
    if (typeof item !== "object" || item === null) return null;
    const { tool, args } = item as { tool?: unknown; args?: unknown };
    if (typeof tool !== "string" || typeof args !== "object" || args === null || Array.isArray(args))
      return null;
    calls.push({ name: tool, arguments: args as Record<string, unknown> });
  }
  return calls.length === 0 ? null : { calls, prose: cut < 0 ? "" : text.slice(0, cut) };
}

/** Calls as the reply the tool prompt asks for: one JSON object, or an array of them. */
export function callsAsPromptText(calls: readonly SimCall[]): string {
  const objects = calls.map((call) => ({ tool: call.name, args: call.arguments }));
  return JSON.stringify(objects.length === 1 ? objects[0] : objects);
}
