/**
 * `forge worker`, `forge enqueue` and `forge runs` on the embedded run queue (a directory): a
 * worker process holds the directory and works its runs; producers and `forge runs` open it as
 * clients from other terminals.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { type Command, InvalidArgumentError } from "commander";
import type { RunQueue, RunRecord, RunRegistry, RunStatus } from "../queue/index.ts";

const DEFAULT_QUEUE_DIR = ".forge/queue";
const STATUSES: readonly RunStatus[] = ["waiting", "active", "completed", "failed", "cancelled"];

/** Add `worker`, `enqueue` and `runs` to `program`. */
export function registerQueueCommands(program: Command): void {
  program
    .command("worker")
    .description("Work the runs of an embedded run queue with the workflows of a registry module")
    .requiredOption(
      "--registry <module>",
      "a module whose default (or `registry`) export is defineRegistry({ workflows, runner })",
    )
    .option("--queue <dir>", "the queue's directory", DEFAULT_QUEUE_DIR)
    .option("--concurrency <n>", "runs at once", positiveInteger, 1)
    .option("--watch <url>", "report each run to a watch server (forge watch), named by its run id", watchUrl)
    .action(async (options: { registry: string; queue: string; concurrency: number; watch?: string }) => {
      const registry = await loadRegistry(options.registry);
      const { createEmbeddedQueue, startWorker } = await import("../queue/index.ts");
      const queue = await createEmbeddedQueue({ dir: options.queue, waitForLockMs: 15_000 });
      const watch =
        options.watch === undefined
          ? undefined
          : (await import("../watch/worker-watch.ts")).createWorkerWatch({ url: options.watch });
      const worker = startWorker({
        queue,
        registry,
        concurrency: options.concurrency,
        ...(watch && { watch }),
        onSettled: (runId, outcome) => console.error(`${runId} ${outcome}`),
      });
      console.error(
        `forge worker on ${resolve(options.queue)}: ${[...registry.workflows.keys()].join(", ")}${options.watch ? `, runs reported to ${options.watch}` : ""} (Ctrl-C hands runs back)`,
      );
      const stop = () => {
        worker
          .close()
          .then(() => queue.close())
          .then(
            () => process.exit(0),
            () => process.exit(1),
          );
      };
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    });

  program
    .command("enqueue")
    .description("Add a run to an embedded run queue (the same --run-id twice adds it once)")
    .argument("<workflow>", "the workflow's name in the worker's registry")
    .argument("<message>", "the user message")
    .option("--queue <dir>", "the queue's directory", DEFAULT_QUEUE_DIR)
    .option("--run-id <id>", "the run's id (default: a random one)")
    .option("--priority <n>", "higher runs first", integer, 0)
    .option("--wait", "wait for the run to finish and print its result", false)
    .action(
      async (
        workflow: string,
        message: string,
        options: { queue: string; runId?: string; priority: number; wait: boolean },
      ) => {
        const queue = await openClient(options.queue);
        try {
          const run = await queue.enqueue(workflow, message, {
            priority: options.priority,
            ...(options.runId !== undefined && { runId: options.runId }),
          });
          console.log(run.runId);
          if (options.wait) console.log(JSON.stringify(await queue.result(run.runId)));
        } finally {
          await queue.close();
        }
      },
    );

  const runs = program.command("runs").description("List, show and cancel the runs of an embedded run queue");
  runs
    .command("ls")
    .description("One line per run: id, status, workflow, attempts")
    .option("--queue <dir>", "the queue's directory", DEFAULT_QUEUE_DIR)
    .option("--status <status>", `only runs in this status (${STATUSES.join(", ")})`, status)
    .action(async (options: { queue: string; status?: RunStatus }) => {
      const queue = await openClient(options.queue);
      for (const run of await queue.list(options.status ? { status: options.status } : {})) {
        console.log(`${run.runId}\t${run.status}\t${run.workflow}\tattempts=${run.attempts}`);
      }
    });
  runs
    .command("show")
    .description("A run's record as JSON (the checkpoint's snapshot left out)")
    .argument("<run-id>")
    .option("--queue <dir>", "the queue's directory", DEFAULT_QUEUE_DIR)
    .action(async (runId: string, options: { queue: string }) => {
      const run = await (await openClient(options.queue)).get(runId);
      if (!run) throw new Error(`No run ${runId} in ${resolve(options.queue)}`);
      console.log(JSON.stringify(withoutSnapshot(run), null, 2));
    });
  runs
    .command("cancel")
    .description("Cancel a waiting or active run (an active one stops at its next checkpoint)")
    .argument("<run-id>")
    .option("--queue <dir>", "the queue's directory", DEFAULT_QUEUE_DIR)
    .action(async (runId: string, options: { queue: string }) => {
      const queue = await openClient(options.queue);
      if (!(await queue.get(runId))) throw new Error(`No run ${runId} in ${resolve(options.queue)}`);
      await queue.cancel(runId);
      console.log(`cancel requested: ${runId}`);
    });
}

async function openClient(dir: string): Promise<RunQueue> {
  const { createEmbeddedQueue } = await import("../queue/index.ts");
  return createEmbeddedQueue({ dir, mode: "client" });
}

/** The registry a module exports (default, or `registry`). */
async function loadRegistry(specifier: string): Promise<RunRegistry> {
  const module = (await import(pathToFileURL(resolve(specifier)).href)) as Record<string, unknown>;
  const registry = (module.default ?? module.registry) as Partial<RunRegistry> | undefined;
  if (!(registry?.workflows instanceof Map) || typeof registry.runner?.run !== "function") {
    throw new Error(
      `${specifier} must export (default, or as \`registry\`) the result of defineRegistry({ workflows, runner })`,
    );
  }
  return registry as RunRegistry;
}

function withoutSnapshot(run: RunRecord): Omit<RunRecord, "checkpoint"> & { checkpoint?: unknown } {
  const { checkpoint, ...rest } = run;
  return checkpoint ? { ...rest, checkpoint: { meta: checkpoint.meta } } : rest;
}

function positiveInteger(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new InvalidArgumentError("must be a positive integer");
  return parsed;
}

function integer(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed)) throw new InvalidArgumentError("must be an integer");
  return parsed;
}

function status(value: string): RunStatus {
  if (!STATUSES.includes(value as RunStatus))
    throw new InvalidArgumentError(`must be one of ${STATUSES.join(", ")}`);
  return value as RunStatus;
}

/** A watch server's URL (http or https). */
function watchUrl(value: string): string {
  if (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol)) {
    throw new InvalidArgumentError(
      `'${value}' is not an http(s) URL; pass the URL forge watch printed, e.g. http://127.0.0.1:4141`,
    );
  }
  return value;
}
