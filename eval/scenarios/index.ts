/** The eval scenarios: every category, the registry, and selection by id and tag. */
import { BASIC_SCENARIOS } from "./basic.ts";
import { COMPACTION_SCENARIOS } from "./compaction.ts";
import { MODEL_QUALITY_SCENARIOS } from "./model-quality.ts";
import { PLUMBING_SCENARIOS } from "./plumbing.ts";
import { REASONING_SCENARIOS } from "./reasoning.ts";
import type { EvalScenario } from "./scenario.ts";
import { SEED_VARIANT_SCENARIOS } from "./seed-variants.ts";
import { STATEFUL_MODEL_QUALITY_SCENARIOS } from "./stateful-model-quality.ts";
import { STATEFUL_PLUMBING_SCENARIOS } from "./stateful-plumbing.ts";
import { STATEFUL_REASONING_SCENARIOS } from "./stateful-reasoning.ts";

export * from "./scenario.ts";

/** Every scenario, in report order. */
export const ALL_SCENARIOS: readonly EvalScenario[] = [
  ...PLUMBING_SCENARIOS,
  ...MODEL_QUALITY_SCENARIOS,
  ...REASONING_SCENARIOS,
  ...COMPACTION_SCENARIOS,
  ...STATEFUL_PLUMBING_SCENARIOS,
  ...STATEFUL_MODEL_QUALITY_SCENARIOS,
  ...STATEFUL_REASONING_SCENARIOS,
  ...SEED_VARIANT_SCENARIOS,
  ...BASIC_SCENARIOS,
];

/**
 * Raised for a scenario id, tag or preset that does not exist; the message lists the valid ones
 * and, given the option's flag, how to name several.
 */
export class UnknownSelectionError extends Error {
  constructor(kind: string, unknown: readonly string[], valid: readonly string[], flag?: string) {
    super(
      `Unknown ${kind} ${unknown.map((name) => `'${name}'`).join(", ")}. Valid ${kind}s: ${valid.join(", ")}${
        flag ? `. Name several separated by commas or spaces: ${flag} ${valid.slice(0, 2).join(",")}` : ""
      }`,
    );
    this.name = "UnknownSelectionError";
  }
}

/** A scenario by id. */
export function scenarioById(id: string): EvalScenario | undefined {
  return ALL_SCENARIOS.find((scenario) => scenario.id === id);
}

/** Every tag used by some scenario, sorted. */
export function allTags(): string[] {
  return [...new Set(ALL_SCENARIOS.flatMap((scenario) => scenario.tags))].sort();
}

/**
 * The scenarios named by `ids` (all when empty) that carry at least one of `tags` (any when
 * empty). Throws `UnknownSelectionError` listing the valid ids or tags.
 */
export function selectScenarios(ids: readonly string[] = [], tags: readonly string[] = []): EvalScenario[] {
  const unknownIds = ids.filter((id) => !scenarioById(id));
  if (unknownIds.length > 0) {
    throw new UnknownSelectionError(
      "scenario",
      unknownIds,
      ALL_SCENARIOS.map((scenario) => scenario.id),
      "--scenario",
    );
  }
  const validTags = allTags();
  const unknownTags = tags.filter((tag) => !validTags.includes(tag));
  if (unknownTags.length > 0) throw new UnknownSelectionError("tag", unknownTags, validTags, "--tags");
  return ALL_SCENARIOS.filter(
    (scenario) =>
      (ids.length === 0 || ids.includes(scenario.id)) &&
      (tags.length === 0 || tags.some((tag) => scenario.tags.includes(tag))),
  );
}
