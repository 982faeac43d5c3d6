/**
 * The JSONL row: one per run, with the config, versions, seed and profile it ran under and its
 * measurements. zod-validated on read, so a report never trusts a line it cannot parse.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { z } from "zod";
import { backendSettingsSchema } from "./backend-settings.ts";

/** Bumped when a row's shape changes incompatibly. */
export const ROW_SCHEMA_VERSION = 1;

const nudgesSchema = z.object({
  retry: z.number(),
  unknown_tool: z.number(),
  step: z.number(),
  prerequisite: z.number(),
});

/** A loop config as rows and queued eval jobs carry it. */
export const configSchema = z.object({
  name: z.string(),
  loop: z.enum(["forge", "ai_sdk", "reference"]),
  rescueEnabled: z.boolean(),
  maxRetriesPerStep: z.number(),
  stepEnforcement: z.boolean(),
  maxToolErrors: z.number().nullable(),
  compaction: z.enum(["tiered", "sliding", "none"]),
  toolSubsets: z.enum(["all", "steps"]).optional(),
  escalation: z.object({ after: z.number(), profile: z.string() }).optional(),
  forceToolChoiceOnRetry: z.boolean().optional(),
});

/** Versions of what produced a row. */
export const versionsSchema = z.object({
  forgeGuardrails: z.string(),
  node: z.string(),
  xstate: z.string(),
  ai: z.string().nullable(),
  commit: z.string().nullable(),
});
export type Versions = z.infer<typeof versionsSchema>;

/** One run. */
export const runRowSchema = z.object({
  schema: z.literal(ROW_SCHEMA_VERSION),
  key: z.string(),
  batchId: z.string(),
  timestamp: z.string(),
  backend: z.string(),
  model: z.string(),
  simulated: z.boolean(),
  profile: z.string().nullable(),
  /** Sampling, request seed and llama-cpp settings; absent in rows written before they were recorded. */
  settings: backendSettingsSchema.optional(),
  baseSeed: z.number(),
  seed: z.number(),
  runIndex: z.number(),
  configLabel: z.string(),
  config: configSchema,
  stream: z.boolean(),
  scenario: z.string(),
  category: z.string(),
  tags: z.array(z.string()),
  stateful: z.boolean(),
  versions: versionsSchema,
  status: z.enum(["done", "failed", "error"]),
  completed: z.boolean(),
  accurate: z.boolean(),
  answerProblem: z.string().nullable(),
  stateProblem: z.string().nullable(),
  failureKind: z.string().nullable(),
  errorName: z.string().nullable(),
  errorMessage: z.string().nullable(),
  terminal: z.object({ tool: z.string(), args: z.record(z.string(), z.unknown()) }).nullable(),
  iterations: z.number(),
  idealIterations: z.number(),
  wastedCalls: z.number(),
  efficiency: z.number().nullable(),
  toolCalls: z.number(),
  toolErrors: z.number(),
  textResponses: z.number(),
  rescues: z.number(),
  nudges: nudgesSchema,
  /** Absent in rows written before forced retries were counted. */
  forcedRetries: z.number().optional(),
  /** Escalations and the calls stronger clients served; only in `reforged+escalation` rows. */
  escalations: z.number().optional(),
  escalatedCalls: z.number().optional(),
  compactions: z.number(),
  maxPhase: z.number(),
  inputTokens: z.number(),
  outputTokens: z.number(),
  peakContextTokens: z.number(),
  /** Absent in rows written before they were recorded (their token figures are chars/4 estimates). */
  cachedTokens: z.number().optional(),
  /** Tokens the backend evaluated (see `evaluatedTokensOf`); absent in rows written before it was recorded. */
  evaluatedTokens: z.number().optional(),
  tokenSource: z.enum(["backend", "estimate", "mixed", "none"]).optional(),
  /** Anthropic: the run's cost in USD from `ANTHROPIC_PRICES` (dated); null elsewhere. */
  costUsd: z.number().nullable().optional(),
  wallMs: z.number(),
  startedFromSnapshot: z.boolean(),
  /** File (next to the JSONL) holding this run's trace, or null. */
  trace: z.string().nullable(),
});
export type RunRow = z.infer<typeof runRowSchema>;

function packageVersion(path: string): string | null {
  try {
    return (JSON.parse(readFileSync(path, "utf8")) as { version?: string }).version ?? null;
  } catch {
    return null;
  }
}

/** The versions of this checkout (package, node, xstate, ai, git commit). */
export function currentVersions(root = process.cwd()): Versions {
  let commit: string | null = null;
  try {
    commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], {
      cwd: root,
      stdio: ["ignore", "pipe", "ignore"],
    })
      .toString()
      .trim();
  } catch {
    commit = null;
  }
  return {
    forgeGuardrails: packageVersion(`${root}/package.json`) ?? "unknown",
    node: process.version,
    xstate: packageVersion(`${root}/node_modules/xstate/package.json`) ?? "unknown",
    ai: packageVersion(`${root}/node_modules/ai/package.json`),
    commit,
  };
}
