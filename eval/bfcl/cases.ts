/**
 * BFCL's cases as the harness sends them: read by BFCL's own loaders in the bridge
 * (`bridge.py prepare`), cached per category under `.cache/bfcl/cases`, checked with zod, and
 * sampled evenly when a run takes fewer than a category holds.
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

/** A category the harness runs. */
export type BfclCategory = (typeof SINGLE_TURN_CATEGORIES)[number];

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

/** One case, as the bridge writes it. */
export const bfclCaseSchema = z.object({
  id: z.string(),
  category: z.enum(SINGLE_TURN_CATEGORIES),
  /** BFCL's `question`: a list of turns; single-turn categories send the first. */
  turns: z.array(z.array(messageSchema)).min(1),
  /** The tools as BFCL's OpenAI FC handler sends them. */
  tools: z.array(z.object({ type: z.literal("function"), function: z.record(z.string(), z.unknown()) })),
  /** BFCL's own function docs (what its checker reads). */
  function: z.array(z.record(z.string(), z.unknown())),
  possible_answer: z.unknown(),
});

/** A BFCL case. */
export type BfclCase = z.infer<typeof bfclCaseSchema>;

/** Thrown when a category is unknown or the bridge fails. */
export class BfclCaseError extends Error {
  override name = "BfclCaseError";
}

/** The categories named by `--categories` (`all` for every single-turn one), checked. */
export function parseCategories(names: readonly string[]): BfclCategory[] {
  if (names.length === 0 || names.includes("all")) return [...SINGLE_TURN_CATEGORIES];
  const known = new Set<string>(SINGLE_TURN_CATEGORIES);
  const unknown = names.filter((name) => !known.has(name));
  if (unknown.length > 0) {
    throw new BfclCaseError(
      `unknown BFCL categor${unknown.length === 1 ? "y" : "ies"} ${unknown.join(", ")}: use ${SINGLE_TURN_CATEGORIES.join(", ")} or all`,
    );
  }
  return names as BfclCategory[];
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
