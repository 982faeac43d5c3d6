/**
 * Shrinking one tool result: truncation (phase 1) and the stub that replaces a dropped result
 * (phase 2+), so the call it answers stays answered.
 */
import { type Message, type MessageMeta, MessageType } from "../core/messages.ts";

/**
 * Content of a dropped tool result. Tool calls are never cut, and a call without an answer is
 * rejected by most chat templates, so a dropped result leaves this short answer behind.
 */
export const DROPPED_RESULT_CONTENT = "[Result dropped by compaction]";

/** The marker appended to a truncated tool result. */
export function truncationMarker(removedChars: number): string {
  return `\n[Truncated — ${removedChars} chars removed]`;
}

/**
 * Keep the first `maxChars` characters of a tool result and say how many were removed.
 * Returns the message itself when it was already compacted or when the truncated form would
 * not be shorter, so compaction never grows a message and is idempotent.
 * @example truncateToolResult(result, 200).content // "<first 200 chars>\n[Truncated — 1800 chars removed]"
 */
export function truncateToolResult(message: Message, maxChars: number): Message {
  if (message.metadata.originalType === MessageType.TOOL_RESULT) return message;
  const content = message.content;
  // Never split a surrogate pair.
  const cut = isHighSurrogate(content.charCodeAt(maxChars - 1)) ? maxChars - 1 : maxChars;
  const removed = content.length - cut;
  const truncated = content.slice(0, cut) + truncationMarker(removed);
  if (truncated.length >= content.length) return message;
  return { ...message, content: truncated, metadata: compactedMeta(message.metadata) };
}

/**
 * Replace a tool result's content with {@link DROPPED_RESULT_CONTENT}, keeping its role,
 * `toolCallId` and `toolName` so the call stays answered. Returns the message itself when the
 * stub would not be shorter.
 */
export function stubToolResult(message: Message): Message {
  if (message.content.length <= DROPPED_RESULT_CONTENT.length) return message;
  return { ...message, content: DROPPED_RESULT_CONTENT, metadata: compactedMeta(message.metadata) };
}

// The old tokenEstimate no longer fits the new content, so it is not carried over.
function compactedMeta(metadata: MessageMeta): MessageMeta {
  const compacted: MessageMeta = { type: metadata.type, originalType: MessageType.TOOL_RESULT };
  if (metadata.stepIndex !== undefined) compacted.stepIndex = metadata.stepIndex;
  return compacted;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
