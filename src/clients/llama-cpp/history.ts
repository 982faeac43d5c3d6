/**
 * OpenAI-shaped wire messages → node-llama-cpp chat history, so the model's chat wrapper renders
 * tool calls and their results in the model's own format.
 */
import type { ChatHistoryItem, ChatModelFunctionCall, ChatModelResponse } from "node-llama-cpp";
import { decodeArguments, isPlainObject } from "../wire.ts";

type WireMessage = Record<string, unknown>;

/**
 * Build a fresh chat history from OpenAI-shaped `messages`:
 * - `system` and `user` messages become system and user items;
 * - an assistant message becomes a model item: its text, then one function call per `tool_calls`
 *   entry (arguments decoded from their JSON string; undecodable ones become `{}`);
 * - a `tool` message becomes the `result` of the call whose id it answers;
 * - assistant and tool messages with nothing else in between form ONE model item, the way
 *   node-llama-cpp records a turn in which the model called tools and went on after the results;
 * - a tool result that answers no known call (a history cut by hand) becomes user text
 *   `[Tool result for <name>] <content>`, and a call that was never answered gets an empty result.
 * The input is not mutated.
 * @example
 * toChatHistory([{ role: "user", content: "Weather?" }])
 * // [{ type: "user", text: "Weather?" }]
 */
export function toChatHistory(messages: readonly WireMessage[]): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = [];
  const openCalls = new Map<string, ChatModelFunctionCall>();
  let turn: ChatModelResponse | null = null;
  for (const message of messages) {
    const content = textOf(message.content);
    if (message.role === "assistant") {
      if (!turn) {
        turn = { type: "model", response: [] };
        history.push(turn);
      }
      appendAssistant(turn, message, content, openCalls);
      continue;
    }
    if (message.role === "tool") {
      const call = typeof message.tool_call_id === "string" ? openCalls.get(message.tool_call_id) : undefined;
      if (call) {
        call.result = content;
        openCalls.delete(message.tool_call_id as string);
        continue;
      }
      const name = typeof message.name === "string" ? message.name : message.tool_name;
      turn = null;
      history.push({
        type: "user",
        text: `${typeof name === "string" ? `[Tool result for ${name}]` : "[Tool result]"} ${content}`,
      });
      continue;
    }
    turn = null;
    history.push(
      message.role === "system" ? { type: "system", text: content } : { type: "user", text: content },
    );
  }
  return history;
}

function appendAssistant(
  turn: ChatModelResponse,
  message: WireMessage,
  content: string,
  openCalls: Map<string, ChatModelFunctionCall>,
): void {
  if (content.length > 0) turn.response.push(content);
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  calls.forEach((entry, index) => {
    const fn = isPlainObject(entry) && isPlainObject(entry.function) ? entry.function : {};
    const call: ChatModelFunctionCall = {
      type: "functionCall",
      name: typeof fn.name === "string" ? fn.name : "",
      params: decodeArguments(fn.arguments) ?? {},
      result: "",
      // Each assistant message's calls form their own batch, answered together before the model goes on.
      startsNewChunk: index === 0,
    };
    turn.response.push(call);
    if (isPlainObject(entry) && typeof entry.id === "string") openCalls.set(entry.id, call);
  });
}

/** The text of a wire `content`: a string, or the text parts of a content-part array. */
function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part) => (isPlainObject(part) && typeof part.text === "string" ? part.text : ""))
    .filter((text) => text.length > 0)
    .join("\n");
}
