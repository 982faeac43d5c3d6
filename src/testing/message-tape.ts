/**
 * The message lists of a test double's calls, recorded without a copy per call: a loop's request
 * history only grows, so each call's list is kept as a prefix of one shared list (only its new
 * messages are added) instead of a full copy that would make recording a run O(n²) in memory.
 */

/** Records message lists; each record reads back as the list it was given, in a copy of its own. */
export class MessageTape<T> {
  // Never changed below its length once a record points into it: records only ever read prefixes.
  #tape: T[] = [];

  /**
   * Record `messages` as they are now; the returned function gives a fresh copy of them each time
   * it is called. Messages are kept by reference (the loop hands over frozen wire objects).
   */
  record(messages: readonly T[]): () => T[] {
    let tape = this.#tape;
    let shared = 0;
    const limit = Math.min(tape.length, messages.length);
    while (shared < limit && tape[shared] === messages[shared]) shared += 1;
    if (shared < tape.length) {
      // Not an extension of the last list (compacted, edited): a tape of its own from here on.
      tape = messages.slice();
      this.#tape = tape;
    } else {
      for (let index = shared; index < messages.length; index += 1) tape.push(messages[index] as T);
    }
    const { length } = messages;
    return () => tape.slice(0, length);
  }
}
