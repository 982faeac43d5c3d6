/**
 * The guardrails' budgets and their defaults, in one zod schema: the runner, the workflow
 * machine's config, the middleware classes and the proxy all read their defaults from here.
 */
import { z } from "zod";

const count = (description: string) => z.number().int().nonnegative().describe(description);

/**
 * Every budget of a guarded run. A budget of `n` tolerates `n` consecutive failures of its kind;
 * the next one exhausts it (with `maxRetriesPerStep = 3`, three nudges, then the fourth failure
 * ends the run).
 */
export const guardLimitsSchema = z.object({
  maxIterations: z.number().int().positive().default(10).describe("LLM calls per run, retries included"),
  maxRetriesPerStep: count("Consecutive responses without a valid tool call (text, unknown tools)").default(
    3,
  ),
  maxToolErrors: count("Consecutive failing tool batches (malformed arguments included)").default(2),
  maxPrematureAttempts: count("Consecutive terminal calls made while required steps are pending").default(3),
  maxPrereqViolations: count("Consecutive batches with unmet prerequisites").default(2),
});

/** The budgets of a guarded run. */
export type GuardLimits = z.output<typeof guardLimitsSchema>;

/** The defaults: 10 iterations, 3 retries, 2 tool errors, 3 premature attempts, 2 prerequisite violations. */
export const DEFAULT_LIMITS: Readonly<GuardLimits> = Object.freeze(guardLimitsSchema.parse({}));

/**
 * Fill in and check budgets. `undefined` takes the default; anything else that is not a
 * non-negative integer (a positive one for `maxIterations`) is a `RangeError` naming the option.
 * @example resolveLimits("WorkflowRunner", { maxToolErrors: 0 }).maxRetriesPerStep // 3
 */
export function resolveLimits(
  owner: string,
  limits: Partial<Record<keyof GuardLimits, unknown>>,
): GuardLimits {
  const defined = Object.fromEntries(
    Object.keys(guardLimitsSchema.shape)
      .map((key) => [key, (limits as Record<string, unknown>)[key]])
      .filter(([, value]) => value !== undefined),
  );
  const parsed = guardLimitsSchema.safeParse(defined);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const name = String(issue?.path[0] ?? "limit");
  const value = (limits as Record<string, unknown>)[name];
  const kind = name === "maxIterations" ? "a positive integer" : "a non-negative integer";
  throw new RangeError(`${owner}: ${name} must be ${kind}, got ${String(value)}`);
}
