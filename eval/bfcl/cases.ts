/**
 * BFCL's cases as the harness sends them: read by BFCL's own loaders in the bridge
 * (`bridge.py prepare`), cached per category under `.cache/bfcl/cases`, checked with zod, and
 * sampled evenly when a run takes fewer than a category holds. A multi-turn case also carries what
 * its simulated APIs start from (`initial_config`, `involved_classes`) and its ground truth: per
 * turn, the calls BFCL executes to get the state and answers a model's calls are checked against.
 */
import { existsSync } from "node:fs";
import { mkdir, rename } from "node:fs/promises";
import { join } from "node:path";
import { execa } from "execa";
import { z } from "zod";
import { readJsonl } from "../batch/jsonl.ts";
import { BFCL_VERSION, type BfclInstall, bfclCacheDir } from "./setup.ts";

/** BFCL v4's single-turn Python categories (its `python` collection), scored by AST or relevance. */
export const SINGLE_TURN_CATEGORIES = [
  "simple_python",
  "multiple",
  "parallel",
  "parallel_multiple",
  "irrelevance",
  "live_simple",
  "live_multiple",
  "live_parallel",
  "live_parallel_multiple",
  "live_irrelevance",
  "live_relevance",
] as const;

/**
 * BFCL v4's multi-turn category the harness runs: several user turns on stateful simulated APIs
 * (a file system, a trading bot, …), each turn answered in as many steps as the model takes.
 */
export const MULTI_TURN_CATEGORIES = ["multi_turn_base"] as const;

/** Every category the harness runs. */
export const BFCL_CATEGORIES = [...SINGLE_TURN_CATEGORIES, ...MULTI_TURN_CATEGORIES] as const;

/** A category the harness runs. */
export type BfclCategory = (typeof BFCL_CATEGORIES)[number];

/** `--categories all`: every single-turn category (multi-turn is named on its own: it is slow). */
export const ALL_CATEGORIES_NAME = "all";

/** The non-live AST categories, the "together" figure. */
export const NON_LIVE_AST: readonly BfclCategory[] = [
  "simple_python",
  "multiple",
  "parallel",
  "parallel_multiple",
];
/** The live AST categories. */
export const LIVE_AST: readonly BfclCategory[] = [
  "live_simple",
  "live_multiple",
  "live_parallel",
  "live_parallel_multiple",
];

const messageSchema = z.object({ role: z.string(), content: z.string() }).loose();

const caseFields = {
  id: z.string(),
  /** BFCL's `question`: a list of turns; single-turn categories send the first. */
  turns: z.array(z.array(messageSchema)).min(1),
  /** The tools as BFCL's OpenAI FC handler sends them. */
  tools: z.array(z.object({ type: z.literal("function"), function: z.record(z.string(), z.unknown()) })),
  /** BFCL's own function docs (what its checker reads). */
  function: z.array(z.record(z.string(), z.unknown())),
};

/** A single-turn case, as the bridge writes it. */
export const singleTurnCaseSchema = z.object({
  ...caseFields,
  category: z.enum(SINGLE_TURN_CATEGORIES),
  possible_answer: z.unknown(),
});

/** A multi-turn case, as the bridge writes it. */
export const multiTurnCaseSchema = z.object({
  ...caseFields,
  category: z.enum(MULTI_TURN_CATEGORIES),
  /** Per turn, the calls BFCL's checker executes as the ground truth (Python call text). */
  possible_answer: z.array(z.array(z.string())),
  /** Each simulated API's starting state, by class name. */
  initial_config: z.record(z.string(), z.unknown()),
  /** The simulated API classes the case's tools belong to. */
  involved_classes: z.array(z.string()).min(1),
});

/** One case, as the bridge writes it. */
export const bfclCaseSchema = z.discriminatedUnion("category", [singleTurnCaseSchema, multiTurnCaseSchema]);

/** A BFCL case. */
export type BfclCase = z.infer<typeof bfclCaseSchema>;
/** A multi-turn BFCL case. */
export type MultiTurnCase = z.infer<typeof multiTurnCaseSchema>;

/** True for a multi-turn case. */
export function isMultiTurnCase(item: BfclCase): item is MultiTurnCase {
  return (MULTI_TURN_CATEGORIES as readonly string[]).includes(item.category);
}

/** Thrown when a category is unknown or the bridge fails. */
export class BfclCaseError extends Error {
  override name = "BfclCaseError";
}

/**
 * The categories named by `--categories`, checked, in BFCL's order: `all` stands for every
 * single-turn one, and adds to the others named (`all multi_turn_base` is every category).
 * @example parseCategories(["all", "multi_turn_base"])
 */
export function parseCategories(names: readonly string[]): BfclCategory[] {
  const known = new Set<string>(BFCL_CATEGORIES);
  const unknown = names.filter((name) => name !== ALL_CATEGORIES_NAME && !known.has(name));
  if (unknown.length > 0) {
    throw new BfclCaseError(
      `unknown BFCL categor${unknown.length === 1 ? "y" : "ies"} ${unknown.join(", ")}: use ${BFCL_CATEGORIES.join(", ")} or ${ALL_CATEGORIES_NAME} (every single-turn one)`,
    );
  }
  const wanted = new Set<string>(names.length === 0 ? [ALL_CATEGORIES_NAME] : names);
  if (wanted.has(ALL_CATEGORIES_NAME)) for (const category of SINGLE_TURN_CATEGORIES) wanted.add(category);
  return BFCL_CATEGORIES.filter((category) => wanted.has(category));
}

/** Every case of `categories`, from the cache or the bridge. */
export async function loadCases(
  install: BfclInstall,
  categories: readonly BfclCategory[],
): Promise<BfclCase[]> {
  const dir = join(bfclCacheDir(), "cases", BFCL_VERSION);
  await mkdir(dir, { recursive: true });
  const cases: BfclCase[] = [];
  for (const category of categories) {
    const file = join(dir, `${category}.jsonl`);
    if (!existsSync(file)) {
      const partial = `${file}.partial`;
      const result = await execa(
        install.python,
        [
          install.bridge,
          "--bfcl-root",
          install.packageRoot,
          "prepare",
          "--categories",
          category,
          "--out",
          partial,
        ],
        { reject: false, all: true, env: { BFCL_PROJECT_ROOT: install.projectRoot } },
      );
      if (result.failed) {
        throw new BfclCaseError(
          `bridge prepare ${category} failed: ${(result.all ?? "").trim().split("\n").at(-1)}`,
        );
      }
      await rename(partial, file);
    }
    const { rows, problems } = readJsonl(file, bfclCaseSchema);
    if (problems.length > 0) {
      throw new BfclCaseError(
        `${file} line ${problems[0]?.line}: ${problems[0]?.message}; delete it and run again`,
      );
    }
    cases.push(...rows);
  }
  return cases;
}

/**
 * At most `perCategory` cases of each category, spread evenly over the category's file (case
 * `floor(i·n/k)` for i < k), so that a sample covers the whole range of a category and two runs
 * with the same size take the same cases.
 * @example sampleCases(cases, 20)
 */
export function sampleCases(cases: readonly BfclCase[], perCategory: number | undefined): BfclCase[] {
  if (perCategory === undefined) return [...cases];
  const byCategory = new Map<string, BfclCase[]>();
  for (const item of cases) byCategory.set(item.category, [...(byCategory.get(item.category) ?? []), item]);
  const sample: BfclCase[] = [];
  for (const items of byCategory.values()) {
    const take = Math.min(perCategory, items.length);
    for (let index = 0; index < take; index += 1) {
      sample.push(items[Math.floor((index * items.length) / take)] as BfclCase);
    }
  }
  return sample;
}
