/**
 * A batch's plan, next to its rows (`x.jsonl` → `x.plan.jsonl`): every target appends the keys it
 * plans, by config, when it starts; a batch config first appends how many targets it has. A
 * report compares the rows with the plan to tell a finished batch from one still running.
 */
import { appendFileSync, existsSync } from "node:fs";
import { z } from "zod";
import { readJsonl } from "./jsonl.ts";

const targetPlanSchema = z.object({
  kind: z.literal("target"),
  /** The target in words: backend, model, and tool mode / think when given. */
  target: z.string(),
  /** Planned run keys by config label. */
  configs: z.record(z.string(), z.array(z.string())),
});
const batchPlanSchema = z.object({
  kind: z.literal("batch"),
  /** Targets of the batch config. */
  targets: z.number().int().positive(),
  /** Runs each target plans. */
  plannedPerTarget: z.number().int().nonnegative(),
});
export const planEntrySchema = z.discriminatedUnion("kind", [targetPlanSchema, batchPlanSchema]);
export type PlanEntry = z.infer<typeof planEntrySchema>;
export type TargetPlan = z.infer<typeof targetPlanSchema>;

/** The plan file of a rows file (`x.jsonl` → `x.plan.jsonl`). */
export function planPathFor(rowsFile: string): string {
  return `${rowsFile.replace(/\.jsonl$/, "")}.plan.jsonl`;
}

/** Append one plan entry next to `rowsFile`. */
export function appendPlan(rowsFile: string, entry: PlanEntry): void {
  appendFileSync(planPathFor(rowsFile), `${JSON.stringify(entry)}\n`);
}

/** A target's or config's runs done of those planned. */
export interface Progress {
  done: number;
  planned: number;
}

/** How far a batch is, by target and config. */
export interface BatchProgressReport {
  targets: (Progress & { target: string; configs: (Progress & { config: string })[] })[];
  /** Targets of a batch config that have not started yet (their runs count as planned, not done). */
  notStarted: number;
  done: number;
  planned: number;
  complete: boolean;
}

/**
 * How far the batch of `rowsFile` is, from its plan and the keys of its rows; `null` when it has
 * no plan file (written before plans were recorded: nothing to compare with). A target planned
 * twice (resumed) counts with its latest plan.
 */
export function batchProgressOf(rowsFile: string, rowKeys: ReadonlySet<string>): BatchProgressReport | null {
  const path = planPathFor(rowsFile);
  if (!existsSync(path)) return null;
  const entries = readJsonl(path, planEntrySchema).rows;
  const byTarget = new Map<string, TargetPlan>();
  let batch: z.infer<typeof batchPlanSchema> | null = null;
  for (const entry of entries) {
    if (entry.kind === "batch") batch = entry;
    else byTarget.set(entry.target, entry);
  }
  const targets = [...byTarget.values()].map((plan) => {
    const configs = Object.entries(plan.configs).map(([config, keys]) => ({
      config,
      done: keys.filter((key) => rowKeys.has(key)).length,
      planned: keys.length,
    }));
    return {
      target: plan.target,
      configs,
      done: configs.reduce((sum, config) => sum + config.done, 0),
      planned: configs.reduce((sum, config) => sum + config.planned, 0),
    };
  });
  const notStarted = batch ? Math.max(0, batch.targets - targets.length) : 0;
  const done = targets.reduce((sum, target) => sum + target.done, 0);
  const planned =
    targets.reduce((sum, target) => sum + target.planned, 0) + notStarted * (batch?.plannedPerTarget ?? 0);
  return { targets, notStarted, done, planned, complete: notStarted === 0 && done === planned };
}

/** The progress as text lines: one per target, then its configs. */
export function progressLines(progress: BatchProgressReport): string[] {
  const lines = [`partial batch: ${progress.done}/${progress.planned} planned runs done`];
  for (const target of progress.targets) {
    lines.push(`  ${target.target}: ${target.done}/${target.planned}`);
    for (const config of target.configs) lines.push(`    ${config.config}: ${config.done}/${config.planned}`);
  }
  if (progress.notStarted > 0) lines.push(`  ${progress.notStarted} target(s) not started yet`);
  return lines;
}
