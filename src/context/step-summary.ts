/**
 * The step-hint summary compaction leaves behind when it drops tool results, so the model
 * still sees which steps are done.
 */
import { createMessage, type Message, MessageRole, MessageType } from "../core/messages.ts";

/** True for the summary compaction maintains (type SUMMARY standing in for tool results). */
export function isStepSummary(message: Message): boolean {
  return (
    message.metadata.type === MessageType.SUMMARY && message.metadata.originalType === MessageType.TOOL_RESULT
  );
}

/**
 * Build the step summary. Its role is `user`, not `system`: several chat templates accept a
 * single system message, at index 0 only.
 */
export function createStepSummary(stepHint: string): Message {
  return createMessage(MessageRole.USER, stepHint, {
    type: MessageType.SUMMARY,
    originalType: MessageType.TOOL_RESULT,
  });
}

/**
 * Put `stepHint` into the history's one step summary: the first existing one is updated where
 * it stands (kept as is when its content already matches); otherwise a new one is inserted
 * right after the first user input (or the first system prompt, or at the start).
 * Returns a new array; `messages` is not touched.
 */
export function upsertStepSummary(messages: readonly Message[], stepHint: string): Message[] {
  const existing = messages.findIndex(isStepSummary);
  if (existing >= 0) {
    if (messages[existing]!.content === stepHint) return [...messages];
    return messages.with(existing, createStepSummary(stepHint));
  }
  const at = insertionIndex(messages);
  return [...messages.slice(0, at), createStepSummary(stepHint), ...messages.slice(at)];
}

function insertionIndex(messages: readonly Message[]): number {
  const userInput = messages.findIndex((message) => message.metadata.type === MessageType.USER_INPUT);
  if (userInput >= 0) return userInput + 1;
  const systemPrompt = messages.findIndex((message) => message.metadata.type === MessageType.SYSTEM_PROMPT);
  return systemPrompt + 1;
}

/**
 * Add or update the step summary on a compacted history, unless `stepHint` is empty or the
 * summary would make the result cost more than `ceilingTokens` (the history before
 * compaction): compaction never grows a history.
 */
export function withStepSummary(
  compacted: Message[],
  stepHint: string,
  estimate: (messages: readonly Message[]) => number,
  ceilingTokens: number,
): Message[] {
  if (stepHint === "") return compacted;
  const summarized = upsertStepSummary(compacted, stepHint);
  return estimate(summarized) <= ceilingTokens ? summarized : compacted;
}
