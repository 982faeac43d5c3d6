/**
 * Anthropic list prices per million tokens, to put a `costUsd` on Anthropic rows. A small table
 * with its date: prices change, so a report says which table it used, and a model missing from
 * it gets no cost rather than a guess.
 */
import type { RecordedExchange } from "../run/recording-client.ts";

/**
 * When the prices below were checked (USD per million tokens). Sources: Anthropic's pricing page
 * (docs.anthropic.com/en/docs/about-claude/pricing: Opus 4.1/4 $15/$75, Sonnet 4/3.7 $3/$15,
 * Haiku 3.5 $0.80/$4, Haiku 3 $0.25/$1.25; 5-minute cache writes 1.25× input, cache hits 0.1×)
 * and, for the 4.5/4.6 generation that stored copy predates, two published price lists that agree
 * (deploybase.ai/articles/claude-api-pricing, March 2026; clawcost: Opus 4.5/4.6 $5/$25,
 * Sonnet 4.5/4.6 $3/$15, Haiku 4.5 $1/$5). Check them against Anthropic's page before quoting a cost.
 */
export const ANTHROPIC_PRICES_AS_OF = "2026-11-24";

/** Prices of one model: input, output, prompt-cache writes (5-minute) and reads. */
export interface ModelPrice {
  input: number;
  output: number;
  cacheWrite: number;
  cacheRead: number;
}

/** Cache writes cost 1.25× input, cache reads 0.1× input (Anthropic's 5-minute cache). */
function price(input: number, output: number): ModelPrice {
  return { input, output, cacheWrite: input * 1.25, cacheRead: input * 0.1 };
}

/** By model-name prefix, longest first: `claude-haiku-4-5-20251001` matches `claude-haiku-4-5`. */
export const ANTHROPIC_PRICES: Readonly<Record<string, ModelPrice>> = {
  "claude-opus-4-6": price(5, 25),
  "claude-opus-4-5": price(5, 25),
  "claude-opus-4-1": price(15, 75),
  "claude-opus-4": price(15, 75),
  "claude-sonnet-4-6": price(3, 15),
  "claude-sonnet-4-5": price(3, 15),
  "claude-sonnet-4": price(3, 15),
  "claude-3-7-sonnet": price(3, 15),
  "claude-haiku-4-5": price(1, 5),
  "claude-3-5-haiku": price(0.8, 4),
  "claude-3-haiku": price(0.25, 1.25),
};

/** The price of a model, by the longest prefix of its name in the table; null when none matches. */
export function anthropicPrice(model: string): ModelPrice | null {
  const match = Object.keys(ANTHROPIC_PRICES)
    .filter((prefix) => model.startsWith(prefix))
    .sort((left, right) => right.length - left.length)[0];
  return match ? (ANTHROPIC_PRICES[match] as ModelPrice) : null;
}

/**
 * What a run's exchanges cost at `price`: uncached input, cache writes, cache reads and output,
 * each at its rate. Only exchanges with backend-reported usage count.
 * @example costOfExchanges(exchanges, ANTHROPIC_PRICES["claude-haiku-4-5"]) // 0.0123
 */
export function costOfExchanges(exchanges: readonly RecordedExchange[], modelPrice: ModelPrice): number {
  let dollars = 0;
  for (const exchange of exchanges) {
    if (exchange.tokenSource !== "backend") continue;
    const cacheRead = exchange.cachedTokens ?? 0;
    const cacheWrite = exchange.cacheWriteTokens ?? 0;
    const uncached = Math.max(0, exchange.promptTokens - cacheRead - cacheWrite);
    dollars +=
      (uncached * modelPrice.input +
        cacheWrite * modelPrice.cacheWrite +
        cacheRead * modelPrice.cacheRead +
        exchange.completionTokens * modelPrice.output) /
      1_000_000;
  }
  return Math.round(dollars * 1_000_000) / 1_000_000;
}
