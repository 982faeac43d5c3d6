/**
 * Which messages compaction must leave alone: the newest iterations and the conversation anchors.
 */
import { type Message, MessageType } from "../core/messages.ts";

/**
 * The `metadata.stepIndex` values of the `keepRecent` newest loop iterations: the first
 * `keepRecent` distinct values met walking back from the end of the history. Messages without a
 * `stepIndex` (seeded history) belong to no iteration.
 * @example newestIterations(history, 2) // Set { 7, 8 }
 */
export function newestIterations(messages: readonly Message[], keepRecent: number): ReadonlySet<number> {
  const steps = new Set<number>();
  for (let index = messages.length - 1; index >= 0 && steps.size < keepRecent; index--) {
    const stepIndex = messages[index]!.metadata.stepIndex;
    if (stepIndex !== undefined) steps.add(stepIndex);
  }
  return steps;
}

/**
 * True for messages every strategy keeps: system prompts, user inputs (the first of each in
 * particular; later ones are earlier turns' or this turn's input) and summaries.
 */
export function isAnchorMessage(message: Message): boolean {
  const type = message.metadata.type;
  return (
    type === MessageType.SYSTEM_PROMPT || type === MessageType.USER_INPUT || type === MessageType.SUMMARY
  );
}

/** Per index: true when the message is an anchor or belongs to one of `protectedSteps`. */
export function protectedMask(messages: readonly Message[], protectedSteps: ReadonlySet<number>): boolean[] {
  return messages.map((message) => {
    const stepIndex = message.metadata.stepIndex;
    return isAnchorMessage(message) || (stepIndex !== undefined && protectedSteps.has(stepIndex));
  });
}
