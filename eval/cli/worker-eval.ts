/**
 * `npm run eval -- worker --queue <spec>`: validate the options, open the queue as a worker, and
 * make its eval runs until stopped.
 */
import { z } from "zod";
import { runEvalWorker } from "../queue/eval-worker.ts";
import { openEvalQueue } from "../queue/open-queue.ts";
import { type EvalIo, EvalUsageError } from "./run-eval.ts";

/** The options of `npm run eval -- worker`, as commander hands them over. */
export const workerOptionsSchema = z.object({
  queue: z.string().min(1),
  concurrency: z.coerce.number({ error: "must be a whole number ≥ 1" }).int().positive().default(1),
  apiKey: z.string().optional(),
  exitWhenIdle: z.boolean().default(false),
});

/** Run `npm run eval -- worker` with raw options until `signal` aborts. */
export async function runWorkerCommand(rawOptions: unknown, io: EvalIo, signal: AbortSignal): Promise<void> {
  const parsed = workerOptionsSchema.safeParse(rawOptions);
  if (!parsed.success) {
    throw new EvalUsageError(
      parsed.error.issues.map((issue) => `--${String(issue.path[0])}: ${issue.message}`).join("; "),
    );
  }
  const options = parsed.data;
  const queue = await openEvalQueue(options.queue, "worker");
  io.stderr(
    `eval worker ${process.pid}: taking runs from ${options.queue} (${queue.engine}), ${options.concurrency} at a time\n`,
  );
  const summary = await runEvalWorker({
    queue,
    concurrency: options.concurrency,
    ...(options.apiKey && { apiKey: options.apiKey }),
    exitWhenIdle: options.exitWhenIdle,
    signal,
  });
  io.stderr(`eval worker ${process.pid}: made ${summary.completed} runs (${summary.failed} jobs refused)\n`);
}
