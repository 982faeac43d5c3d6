/**
 * Token cost against the ideal reference: each completed run's evaluated tokens divided by what
 * the ideal run (`--ideal`: the reference calls played through the loop) cost on the same backend,
 * model, tool mode and scenario.
 */
import { LoopKind } from "../ablation.ts";
import type { RunRow } from "../batch/row.ts";
import { mean } from "./stats.ts";

/** The real-model issue's target: a guarded run costs at most 1.3× the ideal reference's tokens. */
export const IDEAL_COST_TARGET = 1.3;

/** A group's completed runs against the ideal. */
export interface IdealCost {
  /** Completed runs with an evaluated-token count and an ideal run of their scenario. */
  runs: number;
  meanEvaluatedTokens: number;
  meanIdealTokens: number;
  /** Mean over those runs of evaluated / ideal. */
  meanRatio: number;
  medianRatio: number;
  /** Runs at or under `IDEAL_COST_TARGET`. */
  withinTarget: number;
}

/** True for the rows of the ideal reference run (`--ideal`), which are a yardstick, not a config. */
export function isIdealRow(row: RunRow): boolean {
  return row.config.loop === LoopKind.REFERENCE;
}

/** What pairs a run with its ideal: backend, model, tool mode / think, scenario. */
function idealKeyOf(row: RunRow, variant: string): string {
  return [row.backend, row.model, variant, row.scenario].join("|");
}

/**
 * The ideal's evaluated tokens per (backend, model, variant, scenario): the mean over its
 * completed rows that recorded them. `variantOf` names the tool mode / think of a row.
 */
export function idealTokensOf(
  idealRows: readonly RunRow[],
  variantOf: (row: RunRow) => string,
): Map<string, number> {
  const counts = new Map<string, number[]>();
  for (const row of idealRows) {
    if (!row.completed || row.evaluatedTokens === undefined) continue;
    const key = idealKeyOf(row, variantOf(row));
    counts.set(key, [...(counts.get(key) ?? []), row.evaluatedTokens]);
  }
  return new Map([...counts].map(([key, values]) => [key, mean(values) ?? 0]));
}

/**
 * The cost of `rows`' completed runs against `ideal` (from `idealTokensOf`); null when no
 * completed run has both an evaluated-token count and an ideal.
 * @example idealCostOf(reforgedRows, idealTokensOf(idealRows, variantOf), variantOf)?.meanRatio // 1.42
 */
export function idealCostOf(
  rows: readonly RunRow[],
  ideal: ReadonlyMap<string, number>,
  variantOf: (row: RunRow) => string,
): IdealCost | null {
  const pairs = rows.flatMap((row) => {
    const idealTokens = ideal.get(idealKeyOf(row, variantOf(row)));
    return row.completed && row.evaluatedTokens !== undefined && idealTokens !== undefined && idealTokens > 0
      ? [{ evaluated: row.evaluatedTokens, ideal: idealTokens }]
      : [];
  });
  if (pairs.length === 0) return null;
  const ratios = pairs.map((pair) => pair.evaluated / pair.ideal).sort((left, right) => left - right);
  const middle = Math.floor(ratios.length / 2);
  return {
    runs: pairs.length,
    meanEvaluatedTokens: mean(pairs.map((pair) => pair.evaluated)) ?? 0,
    meanIdealTokens: mean(pairs.map((pair) => pair.ideal)) ?? 0,
    meanRatio: mean(ratios) ?? 0,
    medianRatio:
      ratios.length % 2 === 1
        ? (ratios[middle] as number)
        : ((ratios[middle - 1] as number) + (ratios[middle] as number)) / 2,
    withinTarget: ratios.filter((ratio) => ratio <= IDEAL_COST_TARGET).length,
  };
}
