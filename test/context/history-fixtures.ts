/**
 * Builders for realistic loop histories, plus an independent validity oracle and deep freezing.
 */
import { createMessage, type Message, MessageRole, MessageType } from "../../src/core/messages.ts";

export const SYSTEM_TEXT = "You are a procurement agent. Call tools; finish with submit_report.";

export function systemPrompt(content = SYSTEM_TEXT): Message {
  return createMessage(MessageRole.SYSTEM, content, { type: MessageType.SYSTEM_PROMPT });
}

export function userInput(content = "Price 100 units of part A-17 and report."): Message {
  return createMessage(MessageRole.USER, content, { type: MessageType.USER_INPUT });
}

export function reasoning(stepIndex: number, content: string): Message {
  return createMessage(MessageRole.ASSISTANT, content, { type: MessageType.REASONING, stepIndex });
}

export function textResponse(stepIndex: number, content: string): Message {
  return createMessage(MessageRole.ASSISTANT, content, { type: MessageType.TEXT_RESPONSE, stepIndex });
}

export function retryNudge(stepIndex: number, content = "Respond with a tool call."): Message {
  return createMessage(MessageRole.USER, content, { type: MessageType.RETRY_NUDGE, stepIndex });
}

/** An executed batch: one TOOL_CALL message and one TOOL_RESULT per call. */
export function executedBatch(stepIndex: number, results: readonly string[], tool = "fetch"): Message[] {
  const calls = results.map((_, index) => ({
    name: `${tool}_${index}`,
    args: { query: `q${stepIndex}.${index}` },
    callId: `call_${stepIndex}_${index}`,
  }));
  const callMessage = createMessage(
    MessageRole.ASSISTANT,
    "",
    { type: MessageType.TOOL_CALL, stepIndex },
    { toolCalls: calls },
  );
  const resultMessages = calls.map((call, index) =>
    createMessage(
      MessageRole.TOOL,
      results[index]!,
      { type: MessageType.TOOL_RESULT, stepIndex },
      { toolName: call.name, toolCallId: call.callId },
    ),
  );
  return [callMessage, ...resultMessages];
}

type NudgeType =
  | typeof MessageType.STEP_NUDGE
  | typeof MessageType.PREREQUISITE_NUDGE
  | typeof MessageType.RETRY_NUDGE;

/** A blocked batch: a TOOL_CALL message whose every call is answered by a role-`tool` nudge. */
export function blockedBatch(stepIndex: number, nudges: readonly NudgeType[]): Message[] {
  const calls = nudges.map((_, index) => ({
    name: index === 0 ? "submit_report" : `fetch_${index}`,
    args: {},
    callId: `blocked_${stepIndex}_${index}`,
  }));
  const callMessage = createMessage(
    MessageRole.ASSISTANT,
    "",
    { type: MessageType.TOOL_CALL, stepIndex },
    { toolCalls: calls },
  );
  const nudgeMessages = calls.map((call, index) =>
    createMessage(
      MessageRole.TOOL,
      `[StepEnforcementError] ${call.name} was not run: required steps pending.`,
      { type: nudges[index]!, stepIndex },
      { toolName: call.name, toolCallId: call.callId },
    ),
  );
  return [callMessage, ...nudgeMessages];
}

/** Recursively freeze a value so any mutation by the code under test throws. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Reflect.ownKeys(value)) deepFreeze((value as Record<PropertyKey, unknown>)[key]);
  }
  return value;
}

/**
 * Pairing problems of a history, checked both ways: every role-`tool` message answers a call of
 * a preceding tool-call message (the newest one holding its id), and every call is answered.
 */
export function pairingProblems(messages: readonly Message[]): string[] {
  const problems: string[] = [];
  const owner = new Map<string, number>();
  const answered = new Set<string>();
  messages.forEach((message, index) => {
    for (const call of message.toolCalls ?? []) owner.set(call.callId, index);
    if (message.role !== MessageRole.TOOL) return;
    const callIndex = message.toolCallId === undefined ? undefined : owner.get(message.toolCallId);
    if (callIndex === undefined)
      problems.push(`tool message ${index} (${message.toolCallId}) answers no call`);
    else answered.add(`${callIndex}:${message.toolCallId}`);
  });
  messages.forEach((message, index) => {
    for (const call of message.toolCalls ?? []) {
      if (!answered.has(`${index}:${call.callId}`))
        problems.push(`call ${call.callId} at ${index} unanswered`);
    }
  });
  return problems;
}

/** The stepIndex values of the `keepRecent` newest iterations, computed independently of src. */
export function newestSteps(messages: readonly Message[], keepRecent: number): Set<number> {
  const distinct = [
    ...new Set(messages.map((message) => message.metadata.stepIndex).filter((step) => step !== undefined)),
  ];
  // Histories built here number iterations in ascending order.
  return new Set(distinct.sort((a, b) => a - b).slice(Math.max(0, distinct.length - keepRecent)));
}

/** True when `part` appears in `whole` in order, compared by reference. */
export function isSubsequence(part: readonly Message[], whole: readonly Message[]): boolean {
  let cursor = 0;
  for (const message of whole) if (message === part[cursor]) cursor++;
  return cursor === part.length;
}

export function byType(messages: readonly Message[], type: MessageType): Message[] {
  return messages.filter((message) => message.metadata.type === type);
}
