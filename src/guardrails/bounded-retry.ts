/**
 * Bounds on a nudged retry (ADR 022): its reply length, relative to the request's first answer
 * (`retryReplyCap`), and degenerate repetition, the same stretch of text looping at the end of a
 * generation (`findDegenerateRepetition`), which the proxy watches for as the text streams and
 * cuts off. Pure.
 */
import { z } from "zod";

/** The rules of the bounds; every field has its default. */
export const retryBoundsSchema = z.object({
  /** A retry's `max_tokens`: this many times the first answer's tokens… */
  retryFactor: z.number().positive().default(4),
  /** …but never below this many tokens. */
  retryFloorTokens: z.number().int().positive().default(256),
  /** Degenerate repetition: at least this many copies of the repeated stretch… */
  minRepeats: z.number().int().min(2).default(8),
  /** …covering at least this many characters… */
  minChars: z.number().int().positive().default(400),
  /** …of a stretch of at most this many characters. */
  maxPeriod: z.number().int().positive().default(200),
});
export type RetryBounds = z.output<typeof retryBoundsSchema>;

/** Default bounds: a retry gets max(256, 4 × the first answer's tokens); 8 copies over 400 characters are degenerate. */
export const DEFAULT_RETRY_BOUNDS: RetryBounds = Object.freeze(retryBoundsSchema.parse({}));

/**
 * The `max_tokens` of a retry: `max(floor, factor × firstAnswerTokens)`, never above what the
 * client asked (`asked`; undefined: no ask). Undefined when the first answer's length is unknown.
 * @example
 * retryReplyCap(100, 32_000, DEFAULT_RETRY_BOUNDS); // 400
 */
export function retryReplyCap(
  firstAnswerTokens: number | undefined,
  asked: number | undefined,
  bounds: Pick<RetryBounds, "retryFactor" | "retryFloorTokens">,
): number | undefined {
  if (firstAnswerTokens === undefined) return asked;
  const cap = Math.max(bounds.retryFloorTokens, Math.ceil(bounds.retryFactor * firstAnswerTokens));
  return asked === undefined ? cap : Math.min(asked, cap);
}

/**
 * Whether an answer of `tokens` used up its `cap` (at least 95 % of it, as character estimates
 * undercount): it was likely cut short, so the next retry should not be capped again. False
 * without a cap.
 */
export function reachedCap(tokens: number, cap: number | undefined): boolean {
  return cap !== undefined && tokens >= cap * 0.95;
}

/** A degenerate repetition at the end of a text. */
export interface DegenerateRepetition {
  /** Characters of the repeated stretch. */
  period: number;
  /** Where the repetition starts: `text.slice(0, start + period)` keeps one copy. */
  start: number;
  /** Whole copies of the stretch. */
  repeats: number;
}

/**
 * The repetition the text ends with, when it is degenerate: a stretch of at most `maxPeriod`
 * characters repeated at least `minRepeats` times, at least `minChars` characters in all; null
 * otherwise. The shortest such stretch wins. Cost: about `maxPeriod` comparisons on text that does
 * not repeat, so it can run on every streamed chunk.
 * @example
 * findDegenerateRepetition("Let me check. ".repeat(40), DEFAULT_RETRY_BOUNDS); // { period: 14, … }
 */
export function findDegenerateRepetition(
  text: string,
  bounds: Pick<RetryBounds, "minRepeats" | "minChars" | "maxPeriod">,
): DegenerateRepetition | null {
  const end = text.length;
  if (end < bounds.minChars) return null;
  const longest = Math.min(bounds.maxPeriod, Math.floor(end / bounds.minRepeats));
  for (let period = 1; period <= longest; period++) {
    // How far back the text equals itself shifted by `period`.
    let run = 0;
    while (run < end - period && text.charCodeAt(end - 1 - run) === text.charCodeAt(end - 1 - run - period)) {
      run += 1;
    }
    const span = run + period;
    const repeats = Math.floor(span / period);
    if (repeats >= bounds.minRepeats && span >= bounds.minChars) {
      return { period, start: end - span, repeats };
    }
  }
  return null;
}
