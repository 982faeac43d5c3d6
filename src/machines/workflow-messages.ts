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
import type { HeldCall } from "../guardrails/decisions.ts";
import type { RejectDecision } from "../guardrails/replies.ts";
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

/** The message type of each kind of tool-channel rejection. */
const REJECTION_TYPES: Record<RejectDecision["kind"], MessageType> = {
  unknown_tools: MessageType.RETRY_NUDGE,
  malformed_args: MessageType.TOOL_RESULT,
  malformed_args_exhausted: MessageType.TOOL_RESULT,
  premature: MessageType.STEP_NUDGE,
  premature_exhausted: MessageType.STEP_NUDGE,
  prerequisite: MessageType.PREREQUISITE_NUDGE,
  prerequisite_exhausted: MessageType.PREREQUISITE_NUDGE,
};

/** A rejected batch: its TOOL_CALL message, then one role-`tool` reply per call (`replies`, in order). */
export function rejectedBatchMessages(
  calls: readonly ToolCall[],
  replies: readonly string[],
  kind: RejectDecision["kind"],
  runId: string,
  stepIndex: number,
): Message[] {
  const infos = toCallInfos(calls, runId, stepIndex);
  const type = REJECTION_TYPES[kind];
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
        replies[index] ?? "",
        { type, stepIndex },
        { toolName: call.tool, toolCallId: infos[index]?.callId },
      ),
    ),
  ];
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

/**
 * The replies to the held calls of an accepted batch (ADR 039), one per entry of `held`, with the
 * ids `toolCallMessages` gave those calls: a STEP_NUDGE for a premature terminal call, a
 * PREREQUISITE_NUDGE for a call waiting for its prerequisite.
 */
export function heldCallMessages(
  calls: readonly ToolCall[],
  held: readonly HeldCall[],
  replies: readonly string[],
  runId: string,
  stepIndex: number,
): Message[] {
  return held.map((entry, position) =>
    createMessage(
      MessageRole.TOOL,
      replies[position] ?? "",
      {
        type: entry.kind === "premature" ? MessageType.STEP_NUDGE : MessageType.PREREQUISITE_NUDGE,
        stepIndex,
      },
      { toolName: calls[entry.index]?.tool ?? "", toolCallId: createCallId(runId, stepIndex, entry.index) },
    ),
  );
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

/**
 * The calls of the `back`-th last batch (1: the last TOOL_CALL message, 2: the one before) that
 * succeeded: answered by a TOOL_RESULT that is not a `[ToolError]` or `[Cancelled]` reply. A
 * rejected batch's calls were answered by nudges and were not run, so none of them count.
 */
export function succeededBatchCalls(messages: readonly Message[], back: 1 | 2): ToolCallInfo[] {
  const succeeded = new Set<string>();
  let seen = 0;
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index] as Message;
    if (message.metadata.type === MessageType.TOOL_CALL) {
      seen += 1;
      if (seen === back) return (message.toolCalls ?? []).filter((call) => succeeded.has(call.callId));
      succeeded.clear();
    } else if (
      message.metadata.type === MessageType.TOOL_RESULT &&
      message.toolCallId !== undefined &&
      !/^\[(ToolError|Cancelled)\]/.test(message.content)
    ) {
      succeeded.add(message.toolCallId);
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
