/**
 * Incremental wire serialization for one run: a loop serializes its whole history before every LLM
 * call, and the history only grows, so the serializer keeps what it built last time and serializes
 * only the appended messages. Its state belongs to one run (the inference worker keeps one per
 * workflow actor), so concurrent runs never share or evict each other's.
 */
import { extendsHistory, hasReasoning } from "./history.ts";
import { type ApiFormat, foldReasoning, type Message, toApiMessage } from "./messages.ts";

/** What the last call serialized: its (folded) source and the wire list built for it. */
interface Serialized {
  source: readonly Message[];
  /** Never handed out (callers get a copy), so it can grow in place. */
  wire: Record<string, unknown>[];
  /** Only a history frozen when it was serialized is known not to have changed since. */
  frozen: boolean;
}

/**
 * Serializes the histories of one run for one wire format, each message's wire object built once
 * and reused (and frozen, so no client can corrupt it). A history grown from the last one with
 * `appendMessages` costs only its new messages; any other (a compacted copy, an edited one, a
 * branch) reuses the wire objects of its unchanged prefix and of every message seen before.
 * Output equals `serializeHistory`'s for the same history.
 * @example
 * const serializer = new HistorySerializer(client.apiFormat);
 * await client.send(serializer.serialize(context.messages), tools);
 */
export class HistorySerializer {
  readonly format: ApiFormat;
  readonly #perMessage = new WeakMap<Message, Record<string, unknown>>();
  #last: Serialized | undefined;

  constructor(format: ApiFormat) {
    this.format = format;
  }

  /** Fold reasoning and serialize the whole history; the returned list is the caller's. */
  serialize(messages: readonly Message[]): Record<string, unknown>[] {
    const source = hasReasoning(messages) ? foldReasoning(messages) : messages;
    const last = this.#last;
    let wire: Record<string, unknown>[];
    let shared = 0;
    if (last?.frozen && extendsHistory(source, last.source)) {
      // Known without comparing: the last wire list grows in place.
      wire = last.wire;
      shared = last.source.length;
    } else {
      if (last) {
        const limit = Math.min(last.source.length, source.length);
        while (shared < limit && last.source[shared] === source[shared]) shared += 1;
      }
      wire = last ? last.wire.slice(0, shared) : [];
    }
    for (let index = shared; index < source.length; index += 1) {
      wire.push(this.#wireOf(source[index] as Message));
    }
    const frozen = Object.isFrozen(source);
    // The caller may edit its own unfrozen array in place: compare the next call against a copy.
    this.#last = { source: frozen || source !== messages ? source : [...source], wire, frozen };
    return wire.slice();
  }

  #wireOf(message: Message): Record<string, unknown> {
    let serialized = this.#perMessage.get(message);
    if (serialized === undefined) {
      serialized = deepFreeze(toApiMessage(message, this.format));
      this.#perMessage.set(message, serialized);
    }
    return serialized;
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}
