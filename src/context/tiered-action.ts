/**
 * The tiered priority table: what each phase does to a message outside the protected window,
 * by its type alone. Pairing and protection are decided by the caller.
 */
import { type Message, MessageType } from "../core/messages.ts";

/** TieredCompact's phases: 1 light, 2 moderate, 3 emergency. */
export type TieredPhase = 1 | 2 | 3;

/** What a phase does to one message. */
export type TieredAction = "keep" | "drop" | "truncate" | "stub";

type PhaseActions = readonly [phase1: TieredAction, phase2: TieredAction, phase3: TieredAction];

/**
 * Cut first: nudges. Cut second: tool results (truncated, then stubbed: a dropped result leaves
 * a stub because the call it answers is never cut). Cut third and fourth: text responses and
 * reasoning. Every type not listed (tool calls, system prompts, user inputs, summaries) is kept.
 */
const PRIORITY_TABLE: ReadonlyMap<MessageType, PhaseActions> = new Map<MessageType, PhaseActions>([
  [MessageType.STEP_NUDGE, ["drop", "drop", "drop"]],
  [MessageType.PREREQUISITE_NUDGE, ["drop", "drop", "drop"]],
  [MessageType.RETRY_NUDGE, ["drop", "drop", "drop"]],
  [MessageType.TOOL_RESULT, ["truncate", "stub", "stub"]],
  [MessageType.TEXT_RESPONSE, ["keep", "keep", "drop"]],
  [MessageType.REASONING, ["keep", "keep", "drop"]],
]);

/**
 * What `phase` does to `message` by the seeds' priority order.
 * @example tieredAction(toolResult, 1) // "truncate"
 */
export function tieredAction(message: Message, phase: TieredPhase): TieredAction {
  return PRIORITY_TABLE.get(message.metadata.type)?.[phase - 1] ?? "keep";
}
