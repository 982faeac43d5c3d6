/**
 * Append-only histories: the loop grows its history with {@link appendMessages}, and code that keeps
 * state about the last history it saw (the token counter, the wire serializer) asks
 * {@link extendsHistory} whether the new one is that history plus appended messages, an O(1)
 * answer instead of comparing every message of a history that keeps growing.
 */
// Types only: messages.ts imports this module.
import type { Message, MessageType } from "./messages.ts";

const REASONING: MessageType = "reasoning";

/**
 * One line of growth: frozen histories each built by appending to the previous one, so of any two
 * that share a lineage the shorter is a prefix of the longer. Only the newest is held (`tip`), so
 * older histories can be collected. It also remembers how much of the line was scanned for
 * REASONING messages.
 */
interface Lineage {
  tip: readonly Message[];
  scanned: number;
  /** Index of the first REASONING message among the `scanned` ones; -1 if none. */
  firstReasoning: number;
}

const lineages = new WeakMap<readonly Message[], Lineage>();

/**
 * `history` followed by `added`, as a new frozen array (the input is not touched). When `history`
 * is frozen the new array joins its lineage, so `extendsHistory(result, history)` is known without
 * comparing messages.
 * @example
 * context.messages = appendMessages(context.messages, [toolCallMessage]);
 */
export function appendMessages(history: readonly Message[], added: readonly Message[]): Message[] {
  // Spread, not concat: V8's concat takes a slow element-by-element path for a frozen array,
  // several times the cost of a copy, and the loop appends to a frozen history twice a step.
  const next = Object.freeze([...history, ...added]) as Message[];
  if (!Object.isFrozen(history)) return next;
  const lineage = lineages.get(history);
  if (lineage?.tip === history) {
    // Growing the newest history of a line: the new one continues it.
    lineage.tip = next;
    lineages.set(next, lineage);
  } else if (lineage === undefined) {
    // A first append: a line starting at `history`.
    const started: Lineage = { tip: next, scanned: 0, firstReasoning: -1 };
    lineages.set(history, started);
    lineages.set(next, started);
  } else {
    // A second branch off an older history: a line of its own, not known to extend `history`.
    lineages.set(next, { tip: next, scanned: 0, firstReasoning: -1 });
  }
  return next;
}

/**
 * True when `history` is known to hold all of `prefix`'s messages, in order, followed by zero or more
 * others: the same frozen array, or both in one lineage of {@link appendMessages} with `prefix` no
 * longer. `false` means "not known", not "different": callers then compare messages themselves.
 */
export function extendsHistory(history: readonly Message[], prefix: readonly Message[]): boolean {
  if (history === prefix) return Object.isFrozen(history);
  const lineage = lineages.get(prefix);
  return lineage !== undefined && lineages.get(history) === lineage && prefix.length <= history.length;
}

/** Whether a history holds a REASONING message; for lineages, each message is looked at once. */
export function hasReasoning(history: readonly Message[]): boolean {
  const lineage = lineages.get(history);
  if (lineage === undefined) return history.some(isReasoning);
  for (let index = lineage.scanned; index < history.length && lineage.firstReasoning < 0; index++) {
    if (isReasoning(history[index] as Message)) lineage.firstReasoning = index;
  }
  lineage.scanned = Math.max(lineage.scanned, history.length);
  return lineage.firstReasoning >= 0 && lineage.firstReasoning < history.length;
}

function isReasoning(message: Message): boolean {
  return message.metadata.type === REASONING;
}
