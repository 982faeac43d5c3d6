/**
 * OpenAI-shaped history → Anthropic Messages API request: the loop serializes in OpenAI format and
 * the Anthropic client converts before every call. Pure: no I/O, input never mutated.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { decodeArguments, isPlainObject, wireText } from "../wire.ts";

type WireMessage = Record<string, unknown>;
type Block = Anthropic.TextBlockParam | Anthropic.ToolUseBlockParam | Anthropic.ToolResultBlockParam;
interface Turn {
  role: "user" | "assistant";
  content: Block[];
}

/** A tool result before pairing: it may lack an id (then it is matched by tool name). */
interface PendingResult {
  type: "pending_result";
  id: string | undefined;
  name: string | undefined;
  content: string;
}
type DraftBlock = Block | PendingResult;
interface DraftTurn {
  role: "user" | "assistant";
  content: DraftBlock[];
}

/** The content of the synthetic `tool_result` sent for a `tool_use` that was never answered. */
export const UNANSWERED_TOOL_RESULT =
  "Not executed: this call received no result (it was rejected before it could run).";

/** An Anthropic request's `system` and `messages`. */
export interface AnthropicConversation {
  system: string | undefined;
  messages: Anthropic.MessageParam[];
}

/**
 * Convert OpenAI-shaped `messages` for the Messages API:
 * - every system message goes to `system` (joined by a blank line);
 * - assistant `tool_calls` become `tool_use` blocks (arguments decoded), after the message's text;
 * - `role: "tool"` results become `tool_result` blocks in a user message, placed before any text
 *   and ordered like the calls they answer; a result without `tool_call_id` answers the first
 *   unanswered call of the same tool name, and one that answers no call becomes user text;
 * - every `tool_use` without a result gets a synthetic `is_error` result, so Anthropic's pairing
 *   rule holds (the loop's step and unknown-tool nudges leave such calls);
 * - consecutive messages of the same role are merged (Anthropic requires alternation) and empty
 *   text is dropped.
 * Tool-call ids are kept, with characters Anthropic does not allow replaced by `_`.
 * @example
 * toAnthropicMessages([{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }])
 * // { system: "Be brief.", messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }] }
 */
export function toAnthropicMessages(messages: readonly WireMessage[]): AnthropicConversation {
  const system: string[] = [];
  const drafts: DraftTurn[] = [];
  let generatedIds = 0;
  const nextId = () => `toolu_forge_${++generatedIds}`;
  for (const message of messages) {
    const text = wireText(message.content);
    if (message.role === "system") {
      if (text.trim().length > 0) system.push(text);
    } else if (message.role === "assistant") {
      drafts.push({ role: "assistant", content: [...textBlocks(text), ...toolUseBlocks(message, nextId)] });
    } else if (message.role === "tool") {
      drafts.push({ role: "user", content: [pendingResult(message, text)] });
    } else {
      drafts.push({ role: "user", content: textBlocks(text) });
    }
  }
  const turns = pairToolResults(mergeTurns(drafts.filter((turn) => turn.content.length > 0)));
  return {
    system: system.length > 0 ? system.join("\n\n") : undefined,
    messages: turns.map((turn) => ({ role: turn.role, content: turn.content })),
  };
}

function textBlocks(text: string): Anthropic.TextBlockParam[] {
  return text.trim().length > 0 ? [{ type: "text", text }] : [];
}

function toolUseBlocks(message: WireMessage, nextId: () => string): Anthropic.ToolUseBlockParam[] {
  if (!Array.isArray(message.tool_calls)) return [];
  return message.tool_calls.map((call: unknown) => {
    const record = isPlainObject(call) ? call : {};
    const fn = isPlainObject(record.function) ? record.function : {};
    return {
      type: "tool_use",
      id: typeof record.id === "string" && record.id.length > 0 ? toolUseId(record.id) : nextId(),
      name: typeof fn.name === "string" ? fn.name : "",
      input: decodeArguments(fn.arguments) ?? {},
    };
  });
}

function pendingResult(message: WireMessage, content: string): PendingResult {
  const id =
    typeof message.tool_call_id === "string" && message.tool_call_id.length > 0
      ? message.tool_call_id
      : undefined;
  const name = typeof message.name === "string" ? message.name : message.tool_name;
  return {
    type: "pending_result",
    id: id === undefined ? undefined : toolUseId(id),
    name: typeof name === "string" ? name : undefined,
    content,
  };
}

/** Anthropic tool ids match `^[a-zA-Z0-9_-]+$`. */
function toolUseId(id: string): string {
  return id.replace(/[^a-zA-Z0-9_-]/g, "_");
}

function mergeTurns(turns: DraftTurn[]): DraftTurn[] {
  const merged: DraftTurn[] = [];
  for (const turn of turns) {
    const previous = merged.at(-1);
    if (previous && previous.role === turn.role) previous.content.push(...turn.content);
    else merged.push({ role: turn.role, content: [...turn.content] });
  }
  return merged;
}

/**
 * Give every `tool_use` its `tool_result` in the user turn right after it: real results by id
 * (or by name), synthetic error results for the rest; results that answer nothing become text.
 */
function pairToolResults(turns: DraftTurn[]): Turn[] {
  const paired: Turn[] = [];
  // Turns alternate after merging, so a user turn follows the assistant turn whose calls it answers.
  for (const turn of turns) {
    if (turn.role === "assistant") {
      paired.push({ role: "assistant", content: turn.content.filter(isBlock) });
      continue;
    }
    const previous = paired.at(-1);
    const calls = previous?.role === "assistant" ? previous.content.filter(isToolUse) : [];
    paired.push({ role: "user", content: answerCalls(calls, turn.content) });
  }
  const last = paired.at(-1);
  if (last?.role === "assistant" && last.content.some(isToolUse)) {
    paired.push({ role: "user", content: answerCalls(last.content.filter(isToolUse), []) });
  }
  return paired.filter((turn) => turn.content.length > 0);
}

function answerCalls(calls: Anthropic.ToolUseBlockParam[], content: DraftBlock[]): Block[] {
  const results = new Map<string, Anthropic.ToolResultBlockParam>();
  const rest: Block[] = [];
  for (const block of content) {
    if (block.type !== "pending_result") {
      rest.push(block);
      continue;
    }
    const call =
      block.id !== undefined
        ? calls.find((candidate) => candidate.id === block.id && !results.has(candidate.id))
        : calls.find((candidate) => candidate.name === block.name && !results.has(candidate.id));
    if (call) {
      results.set(call.id, { type: "tool_result", tool_use_id: call.id, content: block.content });
    } else {
      const label = block.name ? `[Tool result for ${block.name}]` : "[Tool result]";
      rest.push({ type: "text", text: `${label} ${block.content}` });
    }
  }
  const answers = calls.map(
    (call): Anthropic.ToolResultBlockParam =>
      results.get(call.id) ?? {
        type: "tool_result",
        tool_use_id: call.id,
        content: UNANSWERED_TOOL_RESULT,
        is_error: true,
      },
  );
  return [...answers, ...rest];
}

function isToolUse(block: DraftBlock): block is Anthropic.ToolUseBlockParam {
  return block.type === "tool_use";
}

function isBlock(block: DraftBlock): block is Block {
  return block.type !== "pending_result";
}
