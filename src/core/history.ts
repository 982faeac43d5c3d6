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
  /**
   * The tip's messages in a plain array of the line's own: appends push onto it and the new tip is
   * a copy of it. Copying a plain array is a flat memory copy; copying a frozen one (spread,
   * `concat`, `slice`) takes V8's element-by-element path and, for spread, a backing store grown
   * several times over — about half of the loop's cost per step on long runs.
   */
  backing: Message[];
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
  if (!Object.isFrozen(history)) return Object.freeze([...history, ...added]) as Message[];
  const lineage = lineages.get(history);
  if (lineage?.tip === history) {
    // Growing the newest history of a line: the new one continues it.
    for (const message of added) lineage.backing.push(message);
    const next = Object.freeze(lineage.backing.slice()) as Message[];
    lineage.tip = next;
    lineages.set(next, lineage);
    return next;
  }
  // A first append (a line starting at `history`), or a second branch off an older history (a line
  // of its own, not known to extend `history`).
  const backing = [...history, ...added];
  const next = Object.freeze(backing.slice()) as Message[];
  const line: Lineage = { tip: next, backing, scanned: 0, firstReasoning: -1 };
  if (lineage === undefined) lineages.set(history, line);
  lineages.set(next, line);
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
