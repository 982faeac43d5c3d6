/**
 * An eval run as a queued job: everything a worker on another machine needs to make it (the run
 * key, scenario, config, seed, and the backend with its options, no credentials), as the job's
 * message; its run id is derived from the run key, and the result is the run's outcome.
 */
import { createHash, randomUUID } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { z } from "zod";
import type { BackendOptions } from "../backends/registry.ts";
import type { RunTask } from "../batch/batch.ts";
import { configSchema } from "../batch/row.ts";
import type { RunOutcome } from "../run/types.ts";

/** The workflow name of eval jobs: a worker refuses any other job. */
export const EVAL_JOB = "forge-eval.run";

/** The backend options a job carries: what `startBackend` takes, less the scenarios and the key. */
export type QueuedBackendOptions = Omit<BackendOptions, "scenarios" | "apiKey">;

const backendOptionsSchema = z.strictObject({
  model: z.string().optional(),
  baseUrl: z.string().optional(),
  profile: z.string().optional(),
  delayMs: z.number().optional(),
  sampling: z
    .strictObject({
      temperature: z.number().optional(),
      topP: z.number().optional(),
      topK: z.number().optional(),
    })
    .optional(),
  llamaCppMode: z.enum(["functions", "free"]).optional(),
  threads: z.number().optional(),
  toolMode: z.enum(["native", "prompt", "auto"]).optional(),
  think: z.enum(["on", "off", "auto"]).optional(),
});

/** The message of an eval job (JSON). */
export const evalJobSchema = z.strictObject({
  /** The run key: the row's key. */
  key: z.string().min(1),
  scenario: z.string().min(1),
  config: configSchema,
  runIndex: z.number().int().nonnegative(),
  seed: z.number().int(),
  stream: z.boolean(),
  backend: z.string().min(1),
  backendOptions: backendOptionsSchema,
});
export type EvalJob = z.infer<typeof evalJobSchema>;

/** The job of one task. */
export function evalJobOf(
  task: RunTask,
  backend: string,
  backendOptions: QueuedBackendOptions,
  stream: boolean,
): EvalJob {
  return {
    key: task.key,
    scenario: task.scenario.id,
    config: task.config,
    runIndex: task.runIndex,
    seed: task.seed,
    stream,
    backend,
    backendOptions,
  };
}

/**
 * The queue's run id for a run key of a batch: `eval-` and 40 hex digits of the SHA-256 of the
 * batch's id (see `queueBatchIdFor`) and the key. Run keys hold `|` and `/`, which run ids may not;
 * the same key in the same batch is the same run id, so a collector enqueueing again (a
 * `--resume`) adds nothing, and a new batch runs its keys afresh, even under an old file's name
 * (a queue keeps completed runs: they must not stand in for a new batch's).
 */
export function evalRunId(batchId: string, key: string): string {
  const digest = createHash("sha256").update(`${batchId}\n${key}`).digest("hex");
  return `eval-${digest.slice(0, 40)}`;
}

/** The file holding a rows file's queue batch id (`x.jsonl` → `x.queue-batch`). */
export function queueBatchIdPath(rowsFile: string): string {
  return `${rowsFile.replace(/\.jsonl$/, "")}.queue-batch`;
}

/**
 * The queue batch id of a rows file: a new random one for a new batch (written next to the rows),
 * the one written then for a `--resume`, so a resumed collector finds its runs on the queue.
 */
export function queueBatchIdFor(rowsFile: string, resume: boolean): string {
  const path = queueBatchIdPath(rowsFile);
  if (resume && existsSync(path)) {
    const id = readFileSync(path, "utf8").trim();
    if (/^[0-9a-f-]{36}$/.test(id)) return id;
    throw new EvalJobError(
      `${path} does not hold a batch id (a UUID); delete it to run the batch's runs afresh`,
    );
  }
  const id = randomUUID();
  writeFileSync(path, `${id}\n`);
  return id;
}

/** A job a worker cannot make: not an eval job, or a message that does not parse. */
export class EvalJobError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EvalJobError";
  }
}

/** Read a job's message; throws `EvalJobError` naming what is wrong. */
export function parseEvalJob(workflow: string, message: string): EvalJob {
  if (workflow !== EVAL_JOB) {
    throw new EvalJobError(
      `Not an eval run: job workflow '${workflow}' (eval workers take '${EVAL_JOB}' jobs only; give evals a queue of their own)`,
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(message);
  } catch (error) {
    throw new EvalJobError(`Eval job message is not JSON: ${(error as Error).message}`);
  }
  const parsed = evalJobSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`,
    );
    throw new EvalJobError(`Eval job message does not fit: ${problems.join("; ")}`);
  }
  return parsed.data;
}

const outcomeSchema = z.object({
  measurement: z.looseObject({ status: z.string() }),
  trace: z.looseObject({ key: z.string() }),
});

/** Check a job's result is the outcome of `key` (a worker's answer, read back from the queue). */
export function outcomeOf(key: string, result: unknown): RunOutcome {
  const parsed = outcomeSchema.safeParse(result);
  if (!parsed.success) throw new EvalJobError(`The queue's result for ${key} is not a run outcome`);
  if (parsed.data.trace.key !== key) {
    throw new EvalJobError(`The queue's result for ${key} is the run of ${parsed.data.trace.key}`);
  }
  return result as RunOutcome;
}
