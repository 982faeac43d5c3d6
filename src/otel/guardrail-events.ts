/**
 * Small pure readings of what a run's observer hears: which nudge a message is, whether accepted
 * calls were rescued from a text answer, whether a tool result carries the repeated-call note, the
 * finish reason of an answer, and the W3C `traceparent` of a span context.
 */
import type { SpanContext } from "@opentelemetry/api";
import { type Message, MessageType } from "../core/messages.ts";
import type { LLMResponse } from "../core/types.ts";

/** The nudge kinds, as `forge.nudge.kind` names them. */
export type NudgeKind = "retry" | "step" | "prerequisite";

const NUDGE_KINDS: Readonly<Partial<Record<string, NudgeKind>>> = {
  [MessageType.RETRY_NUDGE]: "retry",
  [MessageType.STEP_NUDGE]: "step",
  [MessageType.PREREQUISITE_NUDGE]: "prerequisite",
};

/** The kind of nudge `message` is, or undefined when it is none. */
export function nudgeKindOf(message: Message): NudgeKind | undefined {
  return NUDGE_KINDS[message.metadata.type];
}

/**
 * True when `message` holds calls accepted from `lastText`, the text the model answered with:
 * the rescue parsed them out of it. A single call whose `message` argument is the text itself is
 * the prose policy taking the text as the answer (ADR 024), no rescue.
 */
export function isRescuedCalls(message: Message, lastText: string | null): boolean {
  if (lastText === null || message.metadata.type !== MessageType.TOOL_CALL) return false;
  const calls = message.toolCalls ?? [];
  const [only] = calls;
  return !(calls.length === 1 && only?.args.message === lastText);
}

/**
 * True when the TOOL_RESULT `message` is the tool's `content` with a note appended: the
 * repeated-call note (`repeatedCallNote`), the only thing the loop appends to a result.
 */
export function hasRepeatedCallNote(message: Message, content: string): boolean {
  return (
    message.metadata.type === MessageType.TOOL_RESULT &&
    message.content.length > content.length &&
    message.content.startsWith(content)
  );
}

/** `gen_ai.response.finish_reasons` of an answer: tool calls, text, or the error. */
export function finishReasonsOf(response: LLMResponse | null): string[] {
  if (response === null) return ["error"];
  return Array.isArray(response) ? ["tool_calls"] : ["stop"];
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The W3C `traceparent` header value of `context` (version 00). */
export function formatTraceparent(context: SpanContext): string {
  return `00-${context.traceId}-${context.spanId}-${(context.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}

/** The remote span context a W3C `traceparent` names; undefined when it is not one. */
export function parseTraceparent(value: string): SpanContext | undefined {
  const match = TRACEPARENT.exec(value.trim());
  if (!match) return undefined;
  const [, traceId = "", spanId = "", flags = "00"] = match;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16), isRemote: true };
}
