/**
 * Aggregates of JSONL rows: per configuration, per configuration and scenario, and paired
 * comparisons of each configuration against a baseline.
 */
import type { RunRow } from "../batch/row.ts";
import { CONTEXT_EXCEEDED } from "../run/context-limit.ts";
import { ALL_SCENARIOS } from "../scenarios/index.ts";
import { type IdealCost, idealCostOf, idealTokensOf, isIdealRow } from "./ideal-cost.ts";
import { type Interval, type McNemarResult, mcnemarExact, mean, wilsonInterval } from "./stats.ts";

/** Metrics of a group of runs. */
export interface GroupMetrics {
  runs: number;
  completed: number;
  correct: number;
  /** Runs the backend or harness failed (a context overflow is not one: see `overflows`). */
  errors: number;
  /**
   * Runs whose prompt outgrew the context (`context_exceeded`): the outcome a budget is built to
   * provoke (no_compact on the compaction scenarios), counted on its own, never as an error.
   */
  overflows: number;
  /** correct / runs, with its Wilson interval. */
  score: Interval;
  completeness: number;
  /** correct / completed, null when none completed. */
  accuracy: number | null;
  /** Mean ideal / actual iterations over completed runs. */
  efficiency: number | null;
  wastedCalls: number;
  nudges: { retry: number; unknown_tool: number; step: number; prerequisite: number };
  /** Retries sent with `toolChoice: "required"` (rows from before the count: 0). */
  forcedRetries: number;
  rescues: number;
  toolErrors: number;
  /** Runs in which compaction fired. */
  compactedRuns: number;
  maxPhase: number;
  meanInputTokens: number;
  /** Where the token figures come from: `backend` (all reported), `estimate` (chars/4 for all), `mixed`. */
  tokenSource: "backend" | "estimate" | "mixed";
  /** Total cost in USD of the runs that have one (Anthropic), or null when none has. */
  costUsd: number | null;
  meanWallMs: number;
  /** Mean tokens the backend evaluated per completed run (`evaluatedTokensOf`); null when none recorded them. */
  meanEvaluatedTokensDone: number | null;
  /** Mean wall time per completed run; null when none completed. */
  meanWallMsDone: number | null;
  simulated: boolean;
}

/** Compute a group's metrics. */
export function groupMetrics(rows: readonly RunRow[]): GroupMetrics {
  const completed = rows.filter((row) => row.completed);
  const correct = rows.filter((row) => row.accurate).length;
  const sum = (pick: (row: RunRow) => number) => rows.reduce((total, row) => total + pick(row), 0);
  return {
    runs: rows.length,
    completed: completed.length,
    correct,
    errors: rows.filter((row) => row.status === "error" && !isOverflow(row)).length,
    overflows: rows.filter(isOverflow).length,
    score: wilsonInterval(correct, rows.length),
    completeness: rows.length === 0 ? 0 : completed.length / rows.length,
    accuracy: completed.length === 0 ? null : correct / completed.length,
    efficiency: mean(completed.map((row) => row.efficiency ?? 0)),
    wastedCalls: mean(rows.map((row) => row.wastedCalls)) ?? 0,
    nudges: {
      retry: sum((row) => row.nudges.retry),
      unknown_tool: sum((row) => row.nudges.unknown_tool),
      step: sum((row) => row.nudges.step),
      prerequisite: sum((row) => row.nudges.prerequisite),
    },
    forcedRetries: sum((row) => row.forcedRetries ?? 0),
    rescues: sum((row) => row.rescues),
    toolErrors: sum((row) => row.toolErrors),
    compactedRuns: rows.filter((row) => row.compactions > 0).length,
    maxPhase: rows.reduce((max, row) => Math.max(max, row.maxPhase), 0),
    meanInputTokens: mean(rows.map((row) => row.inputTokens)) ?? 0,
    tokenSource: groupTokenSource(rows),
    costUsd: rows.some((row) => typeof row.costUsd === "number")
      ? Math.round(sum((row) => row.costUsd ?? 0) * 10_000) / 10_000
      : null,
    meanWallMs: mean(rows.map((row) => row.wallMs)) ?? 0,
    meanEvaluatedTokensDone: mean(completed.flatMap((row) => row.evaluatedTokens ?? [])),
    meanWallMsDone: mean(completed.map((row) => row.wallMs)),
    simulated: rows.some((row) => row.simulated),
  };
}

/**
 * The tool mode and think setting a row ran with, in words (`prompt`, `native, think off`);
 * empty for rows that record neither.
 */
export function variantOf(row: RunRow): string {
  const toolMode = row.settings?.toolMode;
  const think = row.settings?.think;
  return [...(toolMode ? [toolMode] : []), ...(think ? [`think ${think}`] : [])].join(", ");
}

/** Where a group's token figures come from; rows without calls do not count, rows written before it was recorded are estimates. */
function groupTokenSource(rows: readonly RunRow[]): GroupMetrics["tokenSource"] {
  const sources = new Set(
    rows.filter((row) => row.tokenSource !== "none").map((row) => row.tokenSource ?? "estimate"),
  );
  if (sources.size === 1 && sources.has("backend")) return "backend";
  if (sources.size === 0 || (sources.size === 1 && sources.has("estimate"))) return "estimate";
  return "mixed";
}

/** A run that ended because its prompt outgrew the context window or budget. */
export function isOverflow(row: RunRow): boolean {
  return row.failureKind === CONTEXT_EXCEEDED;
}

/** The group a row belongs to: its backend, model, config label (+stream), tool mode and think. */
export function groupKeyOf(row: RunRow): string {
  return [row.backend, row.model, `${row.configLabel}${row.stream ? "+stream" : ""}`, variantOf(row)].join(
    "|",
  );
}

/** One configuration's results. */
export interface ConfigGroup {
  key: string;
  /**
   * Short display name: the config label, prefixed by the model when the data holds several and
   * followed by the tool mode / think in brackets when the data holds several (`reforged [prompt]`).
   */
  name: string;
  backend: string;
  model: string;
  configLabel: string;
  /** The tool mode and think setting (`variantOf`), empty when the rows record neither. */
  variant: string;
  profile: string | null;
  metrics: GroupMetrics;
  byScenario: Map<string, GroupMetrics>;
  /** Completed runs' tokens against the ideal reference, when the data holds one (`--ideal`). */
  idealCost: IdealCost | null;
  rows: RunRow[];
}

/** A paired comparison of a group with the baseline. */
export interface Comparison {
  group: string;
  baseline: string;
  pairs: number;
  /** Score difference (group − baseline) over the paired runs. */
  delta: number;
  test: McNemarResult;
}

/** What a report shows. */
export interface ReportData {
  groups: ConfigGroup[];
  scenarios: string[];
  baseline: ConfigGroup | null;
  comparisons: Comparison[];
  /** The ideal reference runs (`--ideal`): the yardstick of `idealCost`, kept out of the groups. */
  idealRows: RunRow[];
}

/**
 * Group rows by configuration, sorted by score (best first), with per-scenario metrics and
 * paired comparisons against `baselineLabel` (default `reforged`, else the best group).
 */
export function buildReport(allRows: readonly RunRow[], baselineLabel = "reforged"): ReportData {
  const idealRows = allRows.filter(isIdealRow);
  const rows = allRows.filter((row) => !isIdealRow(row));
  const ideal = idealTokensOf(idealRows, variantOf);
  const byGroup = new Map<string, RunRow[]>();
  for (const row of rows) {
    const key = groupKeyOf(row);
    byGroup.set(key, [...(byGroup.get(key) ?? []), row]);
  }
  const models = new Set(rows.map((row) => `${row.backend}|${row.model}`));
  // Tool mode / think in the name only when one model ran under several.
  const variantsByModel = new Map<string, Set<string>>();
  for (const row of rows) {
    const model = `${row.backend}|${row.model}`;
    variantsByModel.set(model, (variantsByModel.get(model) ?? new Set()).add(variantOf(row)));
  }
  const severalVariants = [...variantsByModel.values()].some((variants) => variants.size > 1);
  // Report order: the order scenarios are defined in, then any unknown ones by name.
  const order = new Map(ALL_SCENARIOS.map((scenario, index) => [scenario.id, index]));
  const scenarios = [...new Set(rows.map((row) => row.scenario))].sort(
    (left, right) =>
      (order.get(left) ?? Number.MAX_SAFE_INTEGER) - (order.get(right) ?? Number.MAX_SAFE_INTEGER) ||
      left.localeCompare(right),
  );
  const groups: ConfigGroup[] = [...byGroup].map(([key, groupRows]) => {
    const first = groupRows[0] as RunRow;
    const label = `${first.configLabel}${first.stream ? "+stream" : ""}`;
    const byScenario = new Map<string, GroupMetrics>();
    for (const scenario of scenarios) {
      const scenarioRows = groupRows.filter((row) => row.scenario === scenario);
      if (scenarioRows.length > 0) byScenario.set(scenario, groupMetrics(scenarioRows));
    }
    return {
      key,
      name: `${models.size > 1 ? `${first.model} ${label}` : label}${severalVariants ? ` [${variantOf(first) || "–"}]` : ""}`,
      backend: first.backend,
      model: first.model,
      configLabel: label,
      variant: variantOf(first),
      profile: first.profile,
      metrics: groupMetrics(groupRows),
      byScenario,
      idealCost: idealCostOf(groupRows, ideal, variantOf),
      rows: groupRows,
    };
  });
  groups.sort(
    (left, right) =>
      right.metrics.score.estimate - left.metrics.score.estimate || left.name.localeCompare(right.name),
  );
  const baseline =
    groups.find((group) => group.name === baselineLabel) ??
    groups.find((group) => group.configLabel === baselineLabel) ??
    groups[0] ??
    null;
  // With several models, each group is compared with the baseline config of its own model.
  const baselineOf = (group: ConfigGroup): ConfigGroup | null =>
    models.size === 1 || baseline === null
      ? baseline
      : (groups.find(
          (candidate) =>
            candidate.backend === group.backend &&
            candidate.model === group.model &&
            (candidate.name.endsWith(baselineLabel) || candidate.configLabel === baselineLabel),
        ) ?? null);
  const comparisons = groups.flatMap((group) => {
    const base = baselineOf(group);
    return base && base !== group ? [compareGroups(base, group)] : [];
  });
  return { groups, scenarios, baseline, comparisons, idealRows };
}

/** Pair runs of two groups by (model, scenario, run index, seed) and test the difference. */
export function compareGroups(baseline: ConfigGroup, group: ConfigGroup): Comparison {
  const pairKey = (row: RunRow) => [row.backend, row.model, row.scenario, row.runIndex, row.seed].join("|");
  const base = new Map(baseline.rows.map((row) => [pairKey(row), row.accurate]));
  let pairs = 0;
  let onlyBaseline = 0;
  let onlyGroup = 0;
  let baseCorrect = 0;
  let groupCorrect = 0;
  for (const row of group.rows) {
    const baseAccurate = base.get(pairKey(row));
    if (baseAccurate === undefined) continue;
    pairs += 1;
    if (baseAccurate) baseCorrect += 1;
    if (row.accurate) groupCorrect += 1;
    if (baseAccurate && !row.accurate) onlyBaseline += 1;
    if (!baseAccurate && row.accurate) onlyGroup += 1;
  }
  return {
    group: group.name,
    baseline: baseline.name,
    pairs,
    delta: pairs === 0 ? 0 : (groupCorrect - baseCorrect) / pairs,
    test: mcnemarExact(onlyBaseline, onlyGroup),
  };
}
