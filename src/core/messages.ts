/**
 * Message model: the history the model sees, tagged with metadata that drives compaction.
 * Messages are plain JSON so a run's history can be persisted, inspected and replayed.
 */
import { hasReasoning } from "./history.ts";

/** Who a message is from, as chat APIs name it. */
export const MessageRole = {
  SYSTEM: "system",
  USER: "user",
  ASSISTANT: "assistant",
  TOOL: "tool",
} as const;
export type MessageRole = (typeof MessageRole)[keyof typeof MessageRole];

/** What a message is for; compaction decides what to cut from this tag. */
export const MessageType = {
  SYSTEM_PROMPT: "system_prompt",
  USER_INPUT: "user_input",
  TOOL_CALL: "tool_call",
  TOOL_RESULT: "tool_result",
  REASONING: "reasoning",
  TEXT_RESPONSE: "text_response",
  STEP_NUDGE: "step_nudge",
  RETRY_NUDGE: "retry_nudge",
  PREREQUISITE_NUDGE: "prerequisite_nudge",
  SUMMARY: "summary",
  /**
   * A transient user-role notice that the context is filling up: sent with one request, never kept
   * in the history (see `WorkflowRunnerOptions.contextWarnings`).
   */
  CONTEXT_WARNING: "context_warning",
} as const;
export type MessageType = (typeof MessageType)[keyof typeof MessageType];

/** Metadata attached to a message. Never sent to the model. */
export interface MessageMeta {
  type: MessageType;
  /** 0-based loop iteration (LLM call) that produced the message. */
  stepIndex?: number;
  /** For summaries and truncated messages: the type they replaced. */
  originalType?: MessageType;
  tokenEstimate?: number;
}

/** One tool call inside an assistant message. */
export interface ToolCallInfo {
  name: string;
  args: Record<string, unknown>;
  callId: string;
}

/** A message of the conversation history. */
export interface Message {
  role: MessageRole;
  content: string;
  metadata: MessageMeta;
  /** For role `tool`: the tool whose result this is. */
  toolName?: string;
  /** For role `tool`: the id of the call this answers. */
  toolCallId?: string;
  /** For assistant tool-call messages: one entry per call of the batch. */
  toolCalls?: ToolCallInfo[];
}

/** Wire format a client speaks. */
export type ApiFormat = "ollama" | "openai";

/** Types a caller normally drops before persisting history across turns. */
export const TRANSIENT_MESSAGE_TYPES: ReadonlySet<MessageType> = new Set<MessageType>([
  MessageType.RETRY_NUDGE,
  MessageType.STEP_NUDGE,
  MessageType.PREREQUISITE_NUDGE,
  MessageType.TEXT_RESPONSE,
]);

/**
 * Build a message.
 * @example createMessage("user", "Weather in Paris?", { type: MessageType.USER_INPUT })
 */
export function createMessage(
  role: MessageRole,
  content: string,
  metadata: MessageMeta,
  extra: Pick<Message, "toolName" | "toolCallId" | "toolCalls"> = {},
): Message {
  return { role, content, metadata, ...extra };
}

/**
 * Serialize a message for an LLM API, stripping metadata.
 *
 * `"ollama"`: tool-call arguments are objects and results carry `tool_name`.
 * `"openai"`: tool calls carry `id` and `type:"function"`, arguments are a JSON string,
 * results carry `tool_call_id` and `name`.
 */
export function toApiMessage(message: Message, format: ApiFormat): Record<string, unknown> {
  const wire: Record<string, unknown> = { role: message.role, content: message.content };
  if (message.toolCalls && message.toolCalls.length > 0) {
    wire.tool_calls = message.toolCalls.map((call) =>
      format === "openai"
        ? {
            id: call.callId,
            type: "function",
            function: { name: call.name, arguments: JSON.stringify(call.args) },
          }
        : { function: { name: call.name, arguments: call.args } },
    );
  }
  if (message.role === MessageRole.TOOL) {
    if (format === "openai") {
      if (message.toolCallId !== undefined) wire.tool_call_id = message.toolCallId;
      if (message.toolName !== undefined) wire.name = message.toolName;
    } else if (message.toolName !== undefined) {
      wire.tool_name = message.toolName;
    }
  }
  return wire;
}

/**
 * Fold REASONING messages into the content of the tool-call message that follows them,
 * as the wire expects; the history keeps them separate so compaction can treat them apart.
 * A REASONING message with no tool call after it is sent as plain assistant text.
 */
export function foldReasoning(messages: readonly Message[]): Message[] {
  const folded: Message[] = [];
  let pending: string[] = [];
  for (const message of messages) {
    if (message.metadata.type === MessageType.REASONING) {
      pending.push(message.content);
      continue;
    }
    if (pending.length > 0) {
      if (message.metadata.type === MessageType.TOOL_CALL) {
        const content = [...pending, message.content].filter((part) => part.length > 0).join("\n\n");
        folded.push({ ...message, content });
      } else {
        folded.push(reasoningAsText(pending), message);
      }
      pending = [];
      continue;
    }
    folded.push(message);
  }
  if (pending.length > 0) folded.push(reasoningAsText(pending));
  return folded;
}

function reasoningAsText(parts: string[]): Message {
  return createMessage(MessageRole.ASSISTANT, parts.join("\n\n"), { type: MessageType.REASONING });
}

/**
 * Fold reasoning and serialize the whole history for a client's wire format, from scratch and
 * keeping nothing. A loop that serializes its growing history every iteration uses a
 * `HistorySerializer` of its own instead (same output, only the appended messages serialized).
 */
export function serializeHistory(messages: readonly Message[], format: ApiFormat): Record<string, unknown>[] {
  const source = hasReasoning(messages) ? foldReasoning(messages) : messages;
  return source.map((message) => toApiMessage(message, format));
}

/**
 * True for messages that only matter within the turn that produced them: nudges and the failed
 * text that triggered a retry. Multi-turn callers drop them before persisting history.
 * Keep TEXT_RESPONSE if your workflow treats plain text as a real answer: pass `keepText`.
 */
export function isTransientMessage(message: Message, options: { keepText?: boolean } = {}): boolean {
  if (options.keepText && message.metadata.type === MessageType.TEXT_RESPONSE) return false;
  return TRANSIENT_MESSAGE_TYPES.has(message.metadata.type);
}

/**
 * The durable part of a history: `messages` without transient nudges and failed text.
 * A blocked batch (a tool-call message whose every call was answered only by nudges) goes
 * with its nudges, so no call is left without an answer.
 */
export function durableMessages(
  messages: readonly Message[],
  options: { keepText?: boolean } = {},
): Message[] {
  const answeredByNudge = new Set<string>();
  const answeredByResult = new Set<string>();
  for (const message of messages) {
    if (message.role !== MessageRole.TOOL || message.toolCallId === undefined) continue;
    (isTransientMessage(message, options) ? answeredByNudge : answeredByResult).add(message.toolCallId);
  }
  return messages.filter((message) => {
    if (isTransientMessage(message, options)) return false;
    const calls = message.toolCalls;
    if (message.metadata.type !== MessageType.TOOL_CALL || !calls || calls.length === 0) return true;
    return !calls.every((call) => answeredByNudge.has(call.callId) && !answeredByResult.has(call.callId));
  });
}
