/**
 * Pure builders of the messages the workflow machine appends at each decision.
 * Each takes the decision's data and returns the new messages; none touches the history.
 */
import {
  createMessage,
  type Message,
  MessageRole,
  MessageType,
  type ToolCallInfo,
} from "../core/messages.ts";
import type { ToolCall } from "../core/types.ts";
import type { PrerequisiteViolation } from "../guardrails/step-state.ts";
import { notRunNudge, prerequisiteNudge, stepNudge, unknownToolNudge } from "../prompts/nudges.ts";
import type { ToolOutcome } from "./workflow-context.ts";

/**
 * A deterministic 9-character alphanumeric call id (the shape strict chat templates such as
 * Mistral's require), unique per run, iteration and position.
 */
export function createCallId(runId: string, iteration: number, index: number): string {
  let hash = 0x811c9dc5;
  let second = 0x01000193;
  for (const char of `${runId}:${iteration}:${index}`) {
    const code = char.charCodeAt(0);
    hash = Math.imul(hash ^ code, 0x01000193) >>> 0;
    second = Math.imul(second ^ code, 0x5bd1e995) >>> 0;
  }
  return `${hash.toString(36)}${second.toString(36)}`.padStart(9, "0").slice(-9);
}

/** The calls of a batch as they are stored in a TOOL_CALL message. */
export function toCallInfos(calls: readonly ToolCall[], runId: string, iteration: number): ToolCallInfo[] {
  return calls.map((call, index) => ({
    name: call.tool,
    args: call.args,
    callId: createCallId(runId, iteration, index),
  }));
}

/** The reasoning a batch came with, or null. */
export function batchReasoning(calls: readonly ToolCall[]): string | null {
  const parts = [
    ...new Set(calls.map((call) => call.reasoning?.trim() ?? "").filter((part) => part.length > 0)),
  ];
  return parts.length > 0 ? parts.join("\n\n") : null;
}

/** Failed text and the retry nudge that answers it. */
export function retryMessages(rawResponse: string, nudge: string, stepIndex: number): Message[] {
  return [
    createMessage(MessageRole.ASSISTANT, rawResponse, { type: MessageType.TEXT_RESPONSE, stepIndex }),
    createMessage(MessageRole.USER, nudge, { type: MessageType.RETRY_NUDGE, stepIndex }),
  ];
}

/** A blocked batch: its TOOL_CALL message and one tool-error reply per call. */
function blockedBatch(
  calls: readonly ToolCall[],
  runId: string,
  stepIndex: number,
  type: MessageType,
  reply: (call: ToolCall) => string,
): Message[] {
  const infos = toCallInfos(calls, runId, stepIndex);
  return [
    createMessage(
      MessageRole.ASSISTANT,
      "",
      { type: MessageType.TOOL_CALL, stepIndex },
      { toolCalls: infos },
    ),
    ...calls.map((call, index) =>
      createMessage(
        MessageRole.TOOL,
        reply(call),
        { type, stepIndex },
        { toolName: call.tool, toolCallId: infos[index]?.callId },
      ),
    ),
  ];
}

/** A batch rejected for naming tools that do not exist. */
export function unknownToolMessages(
  calls: readonly ToolCall[],
  unknown: readonly string[],
  available: readonly string[],
  runId: string,
  stepIndex: number,
): Message[] {
  const reason = `it called unknown tool ${unknown.map((name) => `'${name}'`).join(", ")}`;
  return blockedBatch(calls, runId, stepIndex, MessageType.RETRY_NUDGE, (call) =>
    unknown.includes(call.tool) ? unknownToolNudge(call.tool, available) : notRunNudge(call.tool, reason),
  );
}

/** A batch rejected for a premature terminal call. */
export function stepNudgeMessages(
  calls: readonly ToolCall[],
  terminalTool: string,
  pending: readonly string[],
  tier: number,
  runId: string,
  stepIndex: number,
): Message[] {
  const reason = `${terminalTool} was called before the required steps`;
  return blockedBatch(calls, runId, stepIndex, MessageType.STEP_NUDGE, (call) =>
    call.tool === terminalTool
      ? stepNudge(terminalTool, pending, tier)
      : `[StepEnforcementError] ${notRunNudge(call.tool, reason)}`,
  );
}

/** A batch rejected for unmet prerequisites. */
export function prerequisiteMessages(
  calls: readonly ToolCall[],
  violations: readonly PrerequisiteViolation[],
  runId: string,
  stepIndex: number,
): Message[] {
  const reason = `${violations.map((violation) => violation.toolName).join(", ")} lacked prerequisites`;
  return blockedBatch(calls, runId, stepIndex, MessageType.PREREQUISITE_NUDGE, (call) => {
    const violation = violations.find((candidate) => candidate.toolName === call.tool);
    return violation
      ? prerequisiteNudge(call.tool, violation.described)
      : `[PrereqError] ${notRunNudge(call.tool, reason)}`;
  });
}

/** An accepted batch: optional REASONING, then the TOOL_CALL message. */
export function toolCallMessages(calls: readonly ToolCall[], runId: string, stepIndex: number): Message[] {
  const reasoning = batchReasoning(calls);
  const call = createMessage(
    MessageRole.ASSISTANT,
    "",
    { type: MessageType.TOOL_CALL, stepIndex },
    { toolCalls: toCallInfos(calls, runId, stepIndex) },
  );
  return reasoning === null
    ? [call]
    : [createMessage(MessageRole.ASSISTANT, reasoning, { type: MessageType.REASONING, stepIndex }), call];
}

/** One TOOL_RESULT per outcome of an executed batch. */
export function toolResultMessages(outcomes: readonly ToolOutcome[], stepIndex: number): Message[] {
  return outcomes.map((outcome) =>
    createMessage(
      MessageRole.TOOL,
      outcome.content,
      { type: MessageType.TOOL_RESULT, stepIndex },
      { toolName: outcome.tool, toolCallId: outcome.callId },
    ),
  );
}

/** The calls of the last TOOL_CALL message that have no answer yet. */
export function openCalls(messages: readonly Message[]): ToolCallInfo[] {
  const answered = new Set<string>();
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index] as Message;
    if (message.role === MessageRole.TOOL && message.toolCallId !== undefined)
      answered.add(message.toolCallId);
    if (message.metadata.type === MessageType.TOOL_CALL) {
      return (message.toolCalls ?? []).filter((call) => !answered.has(call.callId));
    }
  }
  return [];
}

/** Results for calls a cancellation interrupted, so every call keeps an answer. */
export function cancelledResultMessages(calls: readonly ToolCallInfo[], stepIndex: number): Message[] {
  return calls.map((call) =>
    createMessage(
      MessageRole.TOOL,
      "[Cancelled] The run was cancelled before this tool returned.",
      { type: MessageType.TOOL_RESULT, stepIndex },
      { toolName: call.name, toolCallId: call.callId },
    ),
  );
}
