/**
 * Incremental token counting: each message is estimated once, and a history that only grew by
 * appending since the last count costs only its new messages.
 */
import { extendsHistory } from "../core/history.ts";
import type { Message } from "../core/messages.ts";
import {
  charsPerTokenOf,
  estimateTokensByChars,
  messageChars,
  type TokenEstimator,
} from "./token-estimator.ts";

/**
 * Sums a {@link TokenEstimator} over histories, caching per message object (a `WeakMap`, so
 * dropped messages are collected) and remembering the last history's running total.
 *
 * A history extends the last one when the last one's messages are its prefix: known at once for a
 * history grown from it by `appendMessages` (as the loop grows its own), else checked by reference,
 * one pointer comparison per message, no estimator call and no map lookup. Only the
 * appended messages are then estimated and added. Any other history (a compacted copy, an edited
 * one) is summed from the per-message cache, which estimates only messages never seen before.
 * A character-ratio estimator (the default) is summed in characters and divided once per history.
 */
export class TokenCounter {
  readonly #estimator: TokenEstimator;
  /** Set for a character-ratio estimator: the cache and totals then hold characters. */
  readonly #charsPerToken: number | undefined;
  readonly #perMessage = new WeakMap<Message, number>();
  /** A copy of the last counted history, so in-place edits of that array are noticed. */
  #last: Message[] = [];
  /** The last counted history itself, if it was frozen then (so it cannot have changed since). */
  #lastFrozen: readonly Message[] | null = null;
  #lastTotal = 0;

  constructor(estimator: TokenEstimator = estimateTokensByChars) {
    this.#estimator = estimator;
    this.#charsPerToken = charsPerTokenOf(estimator);
  }

  /** One message's units (tokens, or characters for a ratio estimator), computed once per message object. */
  countMessage(message: Message): number {
    const cached = this.#perMessage.get(message);
    if (cached !== undefined) return cached;
    const tokens = this.#estimate(message);
    this.#perMessage.set(message, tokens);
    return tokens;
  }

  #estimate(message: Message): number {
    const tokens = this.#charsPerToken === undefined ? this.#estimator(message) : messageChars(message);
    // A NaN or negative estimate would silently disable compaction; fail loudly instead.
    if (!Number.isFinite(tokens) || tokens < 0) {
      throw new RangeError(`Token estimator returned ${tokens}; expected a finite number >= 0.`);
    }
    return tokens;
  }

  /**
   * Tokens of a history without caching its new messages or moving the running total: for
   * short-lived candidates (a strategy's trial phases) that would only fill the cache.
   */
  peek(messages: readonly Message[]): number {
    let total = 0;
    for (const message of messages) total += this.#perMessage.get(message) ?? this.#estimate(message);
    return this.#tokens(total);
  }

  /** Tokens of a whole history. */
  count(messages: readonly Message[]): number {
    // A history grown with `appendMessages` from the last one is known to extend it without a scan.
    const resume =
      (this.#lastFrozen !== null && extendsHistory(messages, this.#lastFrozen)) ||
      startsWith(messages, this.#last);
    if (!resume) {
      this.#last = [];
      this.#lastTotal = 0;
    }
    let total = this.#lastTotal;
    for (let index = this.#last.length; index < messages.length; index++) {
      const message = messages[index]!;
      total += this.countMessage(message);
      this.#last.push(message);
    }
    this.#lastTotal = total;
    this.#lastFrozen = Object.isFrozen(messages) ? messages : null;
    return this.#tokens(total);
  }

  /** A total in units as tokens: characters divided once by the ratio, rounded down. */
  #tokens(units: number): number {
    return this.#charsPerToken === undefined ? units : Math.floor(units / this.#charsPerToken);
  }
}

function startsWith(messages: readonly Message[], prefix: readonly Message[]): boolean {
  if (messages.length < prefix.length) return false;
  for (let index = 0; index < prefix.length; index++) {
    if (messages[index] !== prefix[index]) return false;
  }
  return true;
}
