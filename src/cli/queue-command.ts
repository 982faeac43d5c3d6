/**
 * `forge worker`, `forge enqueue` and `forge runs` on a run queue named by `--queue`: a directory
 * (the embedded queue: a worker process holds the directory and works its runs, producers and
 * `forge runs` open it as clients from other terminals) or a `redis://` / `postgres://` URL (BullMQ:
 * any number of workers and producers).
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { type Command, InvalidArgumentError, Option } from "commander";
import type { EmbeddedRunQueue, RunQueue, RunRecord, RunRegistry, RunStatus } from "../queue/index.ts";
import {
  engineOf,
  FINISHED_STATUSES,
  type FinishedStatus,
  QueueFencedError,
  urlWithoutPassword,
} from "../queue/run-queue.ts";
import { otelEndpointOption, startCliTelemetry } from "./otel-option.ts";

const DEFAULT_QUEUE_DIR = ".forge/queue";
const QUEUE_HELP = "the queue: a directory (embedded), or a redis:// or postgres:// URL (BullMQ)";
const STATUSES: readonly RunStatus[] = [
  "waiting",
  "active",
  "awaiting_approval",
  "completed",
  "failed",
  "cancelled",
];

/** Add `worker`, `enqueue` and `runs` to `program`. */
export function registerQueueCommands(program: Command): void {
  program
    .command("worker")
    .description("Work the runs of a run queue with the workflows of a registry module")
    .requiredOption(
      "--registry <module>",
      "a module whose default (or `registry`) export is defineRegistry({ workflows, runner })",
    )
    .option("--queue <dir|url>", QUEUE_HELP, queueSpec, DEFAULT_QUEUE_DIR)
    .option("--concurrency <n>", "runs at once", positiveInteger, 1)
    .option("--watch <url>", "report each run to a watch server (forge watch), named by its run id", watchUrl)
    .option(
      "--endpoint <url>",
      "infer through a pool of llama-server endpoints instead of the registry runner's client (repeat it; slots from each /props)",
      collectEndpoint,
      [] as string[],
    )
    .option(
      "--endpoint-api-key <key>",
      "the API key the --endpoint servers expect (default: $LLAMA_API_KEY, as llama-server reads it)",
    )
    .addOption(otelEndpointOption())
    .option("--otel-record-content", "record messages, tool arguments and results on the spans", false)
    .action(async (options: WorkerCliOptions) => {
      const registry = await loadRegistry(options.registry);
      const { startWorker } = await import("../queue/index.ts");
      const apiKey = options.endpointApiKey ?? process.env.LLAMA_API_KEY;
      const endpoints =
        options.endpoint.length === 0
          ? undefined
          : new (await import("../clients/pool/pool.ts")).EndpointPool({
              endpoints: options.endpoint,
              // Only the key: the pool's clients have their defaults, not the registry client's
              // settings (build the pool in code and pass it to startWorker for those).
              ...(apiKey !== undefined && { clientOptions: { apiKey } }),
            });
      await endpoints?.start();
      const queue = await openQueue(options.queue, "worker");
      const watch =
        options.watch === undefined
          ? undefined
          : (await import("../watch/report/index.ts")).createWorkerWatch({ url: options.watch });
      const telemetry = await startCliTelemetry({
        endpoint: options.otelEndpoint,
        recordContent: options.otelRecordContent,
        command: "worker",
      });
      const worker = startWorker({
        queue,
        registry,
        concurrency: options.concurrency,
        ...(watch && { watch }),
        ...(telemetry && { observers: () => [telemetry.observer], tracing: telemetry.observer }),
        ...(endpoints && { endpoints }),
        onSettled: (runId, outcome) => console.error(`${runId} ${outcome}`),
        onError: (error) => {
          console.error(`forge worker: ${(error as Error)?.stack ?? String(error)}`);
          // Another process took the directory while this one was frozen: its lanes have stopped.
          if (error instanceof QueueFencedError) stop(1);
        },
      });
      console.error(
        `forge worker on ${where(options.queue)}: ${[...registry.workflows.keys()].join(", ")}${endpoints ? `, inferring through ${options.endpoint.map(urlWithoutPassword).join(", ")}` : ""}${options.watch ? `, runs reported to ${options.watch}` : ""}${telemetry ? `, traces sent to ${options.otelEndpoint}` : ""} (Ctrl-C hands runs back)`,
      );
      function stop(code = 0) {
        worker
          .close()
          .then(() => Promise.all([queue.close(), endpoints?.close(), telemetry?.export.shutdown()]))
          .then(
            () => process.exit(code),
            () => process.exit(1),
          );
      }
      process.once("SIGINT", () => stop());
      process.once("SIGTERM", () => stop());
    });

  program
    .command("enqueue")
    .description("Add a run to a run queue (the same --run-id twice adds it once)")
    .argument("<workflow>", "the workflow's name in the worker's registry")
    .argument("<message>", "the user message")
    .option("--queue <dir|url>", QUEUE_HELP, queueSpec, DEFAULT_QUEUE_DIR)
    .option("--run-id <id>", "the run's id (default: a random one)")
    .option("--priority <n>", "higher runs first", integer, 0)
    .option("--wait", "wait for the run to finish and print its result", false)
    .addOption(
      new Option(
        "--traceparent <traceparent>",
        "the W3C traceparent of the trace the run belongs to (a worker with --otel-endpoint continues it)",
      ).env("TRACEPARENT"),
    )
    .option(
      "--max-payload-bytes <n>",
      "largest serialized input (workflow, message) accepted, in bytes (default 1 MiB)",
      positiveInteger,
    )
    .action(
      async (
        workflow: string,
        message: string,
        options: {
          queue: string;
          runId?: string;
          priority: number;
          wait: boolean;
          traceparent?: string;
          maxPayloadBytes?: number;
        },
      ) => {
        const queue = await openQueue(options.queue, "client", {
          ...(options.maxPayloadBytes !== undefined && { maxPayloadBytes: options.maxPayloadBytes }),
        });
        try {
          const run = await queue.enqueue(workflow, message, {
            priority: options.priority,
            ...(options.runId !== undefined && { runId: options.runId }),
            ...(options.traceparent !== undefined && { traceparent: options.traceparent }),
          });
          console.log(run.runId);
          if (options.wait) console.log(JSON.stringify(await queue.result(run.runId)));
        } finally {
          await queue.close();
        }
      },
    );

  const runs = program
    .command("runs")
    .description("List, show, approve, deny, cancel, retry and prune the runs of a run queue");
  runs
    .command("ls")
    .description("One line per run: id, status, workflow, attempts")
    .option("--queue <dir|url>", QUEUE_HELP, queueSpec, DEFAULT_QUEUE_DIR)
    .option("--status <status>", `only runs in this status (${STATUSES.join(", ")})`, status)
    .action(async (options: { queue: string; status?: RunStatus }) => {
      await withQueue(options.queue, async (queue) => {
        for (const run of await queue.list(options.status ? { status: options.status } : {})) {
          console.log(`${run.runId}\t${run.status}\t${run.workflow}\tattempts=${run.attempts}`);
          if (run.status === "awaiting_approval") for (const line of pendingLines(run)) console.log(line);
        }
        // An embedded queue's unreadable run files, moved aside: said on stderr, the listing stays runs only.
        for (const file of (await (queue as Partial<EmbeddedRunQueue>).quarantined?.()) ?? []) {
          console.error(`quarantined ${file.from} (${file.reason}): ${file.path}`);
        }
      });
    });
  runs
    .command("show")
    .description("A run's record as JSON (the checkpoint's snapshot left out)")
    .argument("<run-id>")
    .option("--queue <dir|url>", QUEUE_HELP, queueSpec, DEFAULT_QUEUE_DIR)
    .action(async (runId: string, options: { queue: string }) => {
      await withQueue(options.queue, async (queue) => {
        const run = await queue.get(runId);
        if (!run) throw new Error(`No run ${runId} in ${where(options.queue)}`);
        console.log(JSON.stringify(withoutSnapshot(run), null, 2));
      });
    });
  for (const verb of ["approve", "deny"] as const) registerDecisionCommand(runs, verb);
  runs
    .command("cancel")
    .description("Cancel a waiting or active run (an active one stops at its next checkpoint)")
    .argument("<run-id>")
    .option("--queue <dir|url>", QUEUE_HELP, queueSpec, DEFAULT_QUEUE_DIR)
    .action(async (runId: string, options: { queue: string }) => {
      await withQueue(options.queue, async (queue) => {
        if (!(await queue.get(runId))) throw new Error(`No run ${runId} in ${where(options.queue)}`);
        await queue.cancel(runId);
        console.log(`cancel requested: ${runId}`);
      });
    });
  runs
    .command("retry")
    .description(
      "Put a failed or cancelled run back to waiting: it resumes from its last checkpoint (on an embedded queue, the worker holding the directory carries it out at its next take)",
    )
    .argument("<run-id>")
    .option("--queue <dir|url>", QUEUE_HELP, queueSpec, DEFAULT_QUEUE_DIR)
    .action(async (runId: string, options: { queue: string }) => {
      await withQueue(options.queue, async (queue) => {
        if (!(await queue.get(runId))) throw new Error(`No run ${runId} in ${where(options.queue)}`);
        await queue.retry(runId);
        // An embedded queue's client only asks the worker that holds the directory.
        console.log(
          engineOf(options.queue) === "embedded" ? `retry requested: ${runId}` : `retrying: ${runId}`,
        );
      });
    });
  runs
    .command("prune")
    .description(
      "Remove finished runs older than a duration (a pruned run id enqueues again as a new run; on an embedded queue a running worker carries it out at its next take)",
    )
    .requiredOption(
      "--older-than <duration>",
      "how long ago they finished: 7d, 12h, 30m, 90s, or milliseconds (0: every finished run)",
      duration,
    )
    .option(
      "--status <statuses>",
      `which finished runs, comma-separated (default ${FINISHED_STATUSES.join(",")})`,
      finishedStatuses,
    )
    .option("--queue <dir|url>", QUEUE_HELP, queueSpec, DEFAULT_QUEUE_DIR)
    .action(async (options: { queue: string; olderThan: number; status?: FinishedStatus[] }) => {
      await withQueue(options.queue, async (queue) => {
        const removed = await queue.prune({
          olderThanMs: options.olderThan,
          ...(options.status && { status: options.status }),
        });
        console.log(`removed ${removed} run${removed === 1 ? "" : "s"}`);
      });
    });
}

/**
 * `runs approve` / `runs deny`: decide a parked run's pending call (`--call`), or every undecided
 * one. The typed errors (a call not pending, decided before, a run that is over) end the command
 * with their message. On an embedded queue the worker holding the directory carries it out at its
 * next take.
 */
function registerDecisionCommand(runs: Command, verb: "approve" | "deny"): void {
  runs
    .command(verb)
    .description(
      verb === "approve"
        ? "Approve a run's call that waits for a person (--call), or all of them: once every pending call is decided the run goes on, on any worker"
        : "Deny a run's call that waits for a person (--call), or all of them: the model reads --reason as the call's result",
    )
    .argument("<run-id>")
    .option("--call <id>", "the pending call's id (runs show lists them); default: every undecided call")
    .option("--reason <text>", verb === "deny" ? "why: the model reads it" : "why (kept with the decision)")
    .option("--queue <dir|url>", QUEUE_HELP, queueSpec, DEFAULT_QUEUE_DIR)
    .action(async (runId: string, options: { queue: string; call?: string; reason?: string }) => {
      await withQueue(options.queue, async (queue) => {
        const decide = {
          ...(options.call && { callId: options.call }),
          ...(options.reason && { reason: options.reason }),
        };
        const run = verb === "approve" ? await queue.approve(runId, decide) : await queue.deny(runId, decide);
        const which = options.call ? `call ${options.call} of ${runId}` : `every pending call of ${runId}`;
        // An embedded queue's client only asks the worker that holds the directory.
        console.log(
          engineOf(options.queue) === "embedded"
            ? `${verb} requested: ${which}`
            : `${verb === "approve" ? "approved" : "denied"}: ${which} (run ${run.status})`,
        );
      });
    });
}

/** A parked run's calls, one indented line each: call id, tool, arguments, and any decision taken. */
function pendingLines(run: RunRecord): string[] {
  const decisions = new Map(run.approval?.decisions.map((decision) => [decision.callId, decision]));
  return (run.approval?.pending ?? []).map((call) => {
    const decision = decisions.get(call.callId);
    const state = decision ? (decision.approved ? "approved" : "denied") : "pending";
    return `  ${call.callId}\t${state}\t${call.tool}\t${JSON.stringify(call.args)}`;
  });
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--older-than`: a whole number with a unit (ms, s, m, h, d), or bare milliseconds. */
function duration(value: string): number {
  const match = /^(\d+)(ms|s|m|h|d)?$/.exec(value.trim());
  const ms = match ? Number(match[1]) * (DURATION_UNITS[match[2] ?? "ms"] ?? 1) : Number.NaN;
  if (!Number.isSafeInteger(ms)) {
    throw new InvalidArgumentError(
      `'${value}' is not a duration: a whole number with a unit (7d, 12h, 30m, 90s, 500ms) or milliseconds`,
    );
  }
  return ms;
}

/** `--status` of `runs prune`: finished statuses, comma-separated. */
function finishedStatuses(value: string): FinishedStatus[] {
  const statuses = value.split(",").map((entry) => entry.trim());
  for (const entry of statuses) {
    if (!FINISHED_STATUSES.includes(entry as FinishedStatus)) {
      throw new InvalidArgumentError(
        `'${entry}' is not a finished status; use ${FINISHED_STATUSES.join(", ")} (comma-separated)`,
      );
    }
  }
  return statuses as FinishedStatus[];
}

/**
 * Open the queue `--queue` names: a URL opens BullMQ (workers and producers alike); a directory,
 * the embedded queue, as its worker (holding it) or as a client of the worker that holds it.
 */
async function openQueue(
  queue: string,
  role: "worker" | "client",
  settings: { maxPayloadBytes?: number } = {},
): Promise<RunQueue> {
  const { createRunQueue } = await import("../queue/index.ts");
  const engine = engineOf(queue);
  if (engine === "redis") return createRunQueue({ redis: queue, ...settings });
  if (engine === "postgres") return createRunQueue({ postgres: queue, ...settings });
  return createRunQueue(
    role === "worker"
      ? { embedded: queue, waitForLockMs: 15_000, ...settings }
      : { embedded: queue, mode: "client", ...settings },
  );
}

/** Open a client of `queue`, run `work` with it, and close it (a BullMQ connection keeps a process alive). */
async function withQueue(queue: string, work: (queue: RunQueue) => Promise<void>): Promise<void> {
  const opened = await openQueue(queue, "client");
  try {
    await work(opened);
  } finally {
    await opened.close();
  }
}

/** The queue for messages: a directory's full path, a URL without its password. */
function where(queue: string): string {
  return engineOf(queue) === "embedded" ? resolve(queue) : urlWithoutPassword(queue);
}

/** `--queue`: a directory, or a URL of an engine this CLI knows. */
function queueSpec(value: string): string {
  try {
    engineOf(value);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
  return value;
}

/** The registry a module exports (default, or `registry`). */
export async function loadRegistry(specifier: string): Promise<RunRegistry> {
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
interface WorkerCliOptions {
  registry: string;
  queue: string;
  concurrency: number;
  watch?: string;
  endpoint: string[];
  endpointApiKey?: string;
  otelEndpoint?: string;
  otelRecordContent: boolean;
}

/** `--endpoint`, repeatable: an http(s) URL of a llama-server. */
function collectEndpoint(value: string, previous: string[]): string[] {
  return [...previous, httpUrl(value, "is not an http(s) URL of a llama-server, e.g. http://127.0.0.1:8080")];
}

function watchUrl(value: string): string {
  return httpUrl(
    value,
    "is not an http(s) URL; pass the URL forge watch printed, e.g. http://127.0.0.1:4141",
  );
}

/** `value` if it is an http(s) URL, else a usage error: `'<value>' <problem>`. */
function httpUrl(value: string, problem: string): string {
  if (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol)) {
    throw new InvalidArgumentError(`'${value}' ${problem}`);
  }
  return value;
}
