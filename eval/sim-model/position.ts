/**
 * Where a request stands in its scenario's reference solution, derived from the history alone:
 * which reference calls were made and succeeded, whose results are still visible, and whether
 * the loop just sent a step correction. This keeps the sim-model stateless, so any agent loop
 * (this library's, the AI SDK's, another) can drive it.
 */
import { sameJson } from "../scenarios/checks.ts";
import { type ReferenceStep, stepNeeds } from "../scenarios/scenario.ts";
import { textOf, type WireMessage } from "./wire.ts";

/** Content of a result dropped by compaction (kept in sync with the context module). */
const DROPPED_RESULT = "[Result dropped by compaction]";
const TRUNCATION_MARKER = "\n[Truncated — ";

/** One call the history shows, with its result if it has one. */
export interface ObservedCall {
  name: string;
  args: Record<string, unknown> | null;
  result: string | undefined;
}

/** A request's position in the reference. */
export interface ReferencePosition {
  /** Reference steps already made with success, by index. */
  done: ReadonlySet<number>;
  /** The step a model following the reference plays next (past the last one done). */
  next: number;
  /** The first reference step not done (behind `next` when a step was skipped). */
  firstMissing: number;
  /** Steps whose successful result is still visible in full or truncated (not dropped). */
  visible: ReadonlySet<number>;
  /** The last messages since the model's last turn carry a step or prerequisite correction. */
  corrected: boolean;
  /** Model turns so far (assistant messages). */
  turn: number;
}

/**
 * A tool result that reports success: scenario tools return JSON objects, so anything that is
 * JSON, or a JSON result that compaction truncated or dropped, is a success; error text
 * (`[ToolError] …` from this library, a bare message from other loops) is not.
 */
export function isSuccessfulResult(content: string): boolean {
  if (content === DROPPED_RESULT || content.includes(TRUNCATION_MARKER)) return true;
  const trimmed = content.trim();
  if (!trimmed.startsWith("{") && !trimmed.startsWith("[")) return false;
  try {
    const value: unknown = JSON.parse(trimmed);
    return typeof value === "object" && value !== null;
  } catch {
    return false;
  }
}

/** Every tool call in the history with its result, in order. */
export function observedCalls(messages: readonly WireMessage[]): ObservedCall[] {
  const results = new Map<string, string>();
  for (const message of messages) {
    if (message.role === "tool" && message.tool_call_id !== undefined) {
      results.set(message.tool_call_id, textOf(message));
    }
  }
  const calls: ObservedCall[] = [];
  for (const message of messages) {
    for (const call of message.tool_calls ?? []) {
      calls.push({
        name: call.function.name,
        args: parseArguments(call.function.arguments),
        result: call.id === undefined ? undefined : results.get(call.id),
      });
    }
  }
  return calls;
}

/**
 * Match the history's successful calls against the reference: each one matches the first step
 * not yet done with the same tool and arguments (a step skipped earlier can be made up later).
 * The next step is the one after the furthest step done.
 */
export function locateInReference(
  messages: readonly WireMessage[],
  reference: readonly ReferenceStep[],
): ReferencePosition {
  const done = new Set<number>();
  const visible = new Set<number>();
  for (const call of observedCalls(messages)) {
    if (call.result === undefined || call.args === null || !isSuccessfulResult(call.result)) continue;
    const index = reference.findIndex(
      (step, position) => !done.has(position) && step.tool === call.name && sameJson(step.args, call.args),
    );
    if (index < 0) continue;
    done.add(index);
    if (call.result !== DROPPED_RESULT) visible.add(index);
  }
  markSummarizedSteps(messages, reference, done);
  const next = Math.max(0, ...[...done].map((index) => index + 1));
  let firstMissing = 0;
  while (done.has(firstMissing)) firstMissing += 1;
  return {
    done,
    next,
    firstMissing,
    visible,
    corrected: wasCorrected(messages),
    turn: messages.filter((message) => message.role === "assistant").length,
  };
}

/** True when every result a reference step needs is still visible, so its arguments are known. */
export function knowsArguments(
  reference: readonly ReferenceStep[],
  index: number,
  position: ReferencePosition,
): boolean {
  return stepNeeds(reference, index).every((needed) => position.visible.has(needed));
}

const STEP_SUMMARY = /^\[Steps completed: (.*)\]$/;

/**
 * A sliding window drops whole iterations, calls included; its step summary still names the
 * completed tools. Steps before the earliest matched one whose tool the summary names and the
 * history no longer shows are taken as done.
 */
function markSummarizedSteps(
  messages: readonly WireMessage[],
  reference: readonly ReferenceStep[],
  done: Set<number>,
): void {
  const summary = messages
    .filter((message) => message.role === "user")
    .map((message) => STEP_SUMMARY.exec(textOf(message).trim()))
    .find((match) => match !== null);
  if (!summary) return;
  const completed = new Set((summary[1] ?? "").split(",").map((name) => name.trim()));
  const seen = new Set(observedCalls(messages).map((call) => call.name));
  const bound = done.size > 0 ? Math.min(...done) : reference.length;
  for (let index = 0; index < bound; index += 1) {
    const tool = (reference[index] as ReferenceStep).tool;
    if (completed.has(tool) && !seen.has(tool)) done.add(index);
  }
}

function wasCorrected(messages: readonly WireMessage[]): boolean {
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index] as WireMessage;
    if (message.role === "assistant") return false;
    const text = textOf(message);
    if (text.startsWith("[StepEnforcementError]") || text.startsWith("[PrereqError]")) return true;
  }
  return false;
}

function parseArguments(raw: string | Record<string, unknown>): Record<string, unknown> | null {
  if (typeof raw !== "string") return raw;
  try {
    const value: unknown = JSON.parse(raw || "{}");
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}
