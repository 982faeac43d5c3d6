/**
 * Token estimation: a cheap character heuristic, swappable for a real tokenizer.
 */
import type { Message } from "../core/messages.ts";

/**
 * Estimates how many prompt tokens one message costs.
 * Must be pure and deterministic: results are cached per message object.
 */
export type TokenEstimator = (message: Message) => number;

/**
 * A {@link TokenEstimator} that is a fixed character ratio (`estimateTokensByChars`,
 * `charRatioEstimator`). A history is counted as its total characters divided by
 * `charsPerToken` once, rounded down, not as the sum of per-message roundings.
 */
export interface CharRatioEstimator extends TokenEstimator {
  readonly charsPerToken: number;
}

/**
 * Tokens a chat template wraps each message in (`<|im_start|>assistant\n … <|im_end|>\n` is
 * about 4). Not counted by the default estimator, which follows the seeds' `chars / 4` rule; add it
 * in an estimator of your own for a tighter figure, e.g.
 * `(message) => estimateTokensByChars(message) + MESSAGE_OVERHEAD_TOKENS`.
 */
export const MESSAGE_OVERHEAD_TOKENS = 4;

/** Characters per token the default heuristic assumes (English prose and JSON average ~4). */
export const CHARS_PER_TOKEN = 4;

/**
 * Default estimator, the seeds' rule: characters / 4, rounded down. The characters are the
 * content plus the JSON of the message's tool calls (a tool-call message's content is often empty).
 * Over a history (`ContextManager.estimateTokens`) the characters of all messages are added
 * first and divided once: `floor(total chars / 4)`. Shorter content never costs more, so
 * dropping or truncating never raises the estimate.
 * @example estimateTokensByChars(createMessage("user", "Weather in Paris?", { type: "user_input" })) // 4 (17 chars)
 */
export const estimateTokensByChars: CharRatioEstimator = charRatio(CHARS_PER_TOKEN);

/**
 * The same heuristic at another ratio: for a model whose tokenizer was measured to average
 * `charsPerToken` characters per token (a small model's vocabulary may give ~2.4, where the
 * default assumes 4). Pass it as `ContextManager`'s `estimateTokens`.
 * @example new ContextManager({ strategy, budgetTokens: 2048, estimateTokens: charRatioEstimator(2.4) })
 */
export function charRatioEstimator(charsPerToken: number): CharRatioEstimator {
  if (!Number.isFinite(charsPerToken) || charsPerToken <= 0) {
    throw new RangeError(
      `charRatioEstimator: charsPerToken must be a finite number > 0, got ${charsPerToken}.`,
    );
  }
  return charRatio(charsPerToken);
}

/** The ratio of a character-ratio estimator; undefined for any other estimator. */
export function charsPerTokenOf(estimator: TokenEstimator): number | undefined {
  const ratio = (estimator as Partial<CharRatioEstimator>).charsPerToken;
  return typeof ratio === "number" && Number.isFinite(ratio) && ratio > 0 ? ratio : undefined;
}

function charRatio(charsPerToken: number): CharRatioEstimator {
  const estimate = (message: Message) => Math.floor(messageChars(message) / charsPerToken);
  return Object.assign(estimate, { charsPerToken });
}

/** Characters of a message's content plus the JSON of its tool calls. */
export function messageChars(message: Message): number {
  const toolCalls = message.toolCalls;
  return message.content.length + (toolCalls && toolCalls.length > 0 ? jsonLength(toolCalls) : 0);
}

/**
 * Length of `JSON.stringify(value)` without building the string (several times faster on a
 * long history's tool calls). Escapes are not counted, so strings with quotes, backslashes or
 * control characters come out a little shorter than their JSON.
 */
export function jsonLength(value: unknown): number {
  switch (typeof value) {
    case "string":
      return value.length + 2;
    case "number":
      return Number.isFinite(value) ? String(value).length : 4;
    case "boolean":
      return value ? 4 : 5;
    case "object":
      if (value === null) return 4;
      return Array.isArray(value) ? arrayLength(value) : objectLength(value as Record<string, unknown>);
    default:
      return 0;
  }
}

function arrayLength(items: readonly unknown[]): number {
  let length = 1 + items.length; // brackets and commas
  if (items.length === 0) return 2;
  // JSON writes `null` for holes, undefined and functions inside arrays.
  for (const item of items) length += item === undefined || typeof item === "function" ? 4 : jsonLength(item);
  return length;
}

function objectLength(record: Record<string, unknown>): number {
  let length = 1; // opening brace; each member adds its separator, the last one the closing brace
  let members = 0;
  for (const key in record) {
    if (!Object.hasOwn(record, key)) continue;
    const item = record[key];
    if (item === undefined || typeof item === "function" || typeof item === "symbol") continue;
    length += key.length + 3 + jsonLength(item) + 1; // "key": value + comma or brace
    members++;
  }
  return members === 0 ? 2 : length;
}
