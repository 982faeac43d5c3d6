/**
 * `forge watch`: the local run viewer on 127.0.0.1, listing the runs recorded in a directory and
 * showing each live as runners (createWatchReporter) or the proxy (`forge proxy --watch`) report it.
 */
import type { Command } from "commander";
import { z } from "zod";
import { PortInUseError } from "../server/errors.ts";
import { DEFAULT_WATCH_DIR, DEFAULT_WATCH_PORT, type RunningWatchServer } from "../watch/server/index.ts";
import { flagName } from "./proxy-options.ts";

/** Validated options of `forge watch`. */
export const watchCliOptionsSchema = z.object({
  host: z.string().min(1).default("127.0.0.1"),
  port: z.coerce.number().int().min(0).max(65_535).default(DEFAULT_WATCH_PORT),
  dir: z.string().min(1).default(DEFAULT_WATCH_DIR),
  traces: z.array(z.string().min(1)).default([]),
  allowHost: z.array(z.string().min(1)).default([]),
  maxRunEvents: z.coerce.number().int().min(1).optional(),
});
export type WatchCliOptions = z.output<typeof watchCliOptionsSchema>;

/** Add the `watch` subcommand to `program`. */
export function registerWatchCommand(program: Command): Command {
  return program
    .command("watch")
    .description(
      "Serve a local page (no internet needed) that lists runs and shows each live: statechart, messages, nudges, compactions, LLM calls, outcome",
    )
    .option("--host <host>", "interface to listen on", "127.0.0.1")
    .option("--port <port>", "port to listen on (0: a free one)", String(DEFAULT_WATCH_PORT))
    .option("--dir <path>", "where runs are recorded, one JSONL file each", DEFAULT_WATCH_DIR)
    .option(
      "--traces <file>",
      "also show the runs of an eval traces file (<out>.traces.jsonl), read-only; repeatable",
      (value: string, previous: string[]) => [...previous, value],
      [] as string[],
    )
    .option(
      "--allow-host <name>",
      "also answer this Host name (a DNS name the server is reached by); repeatable",
      (value: string, previous: string[]) => [...previous, value],
      [] as string[],
    )
    .option(
      "--max-run-events <n>",
      "events of a run held in memory (default 5000; the run's file keeps every one)",
    )
    .action(async (raw: Record<string, unknown>, command: Command) => {
      const parsed = watchCliOptionsSchema.safeParse(raw);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        command.error(`error: ${flagName(issue?.path[0])}: ${issue?.message ?? "invalid options"}`);
        return;
      }
      const watch = await runWatch(parsed.data);
      const stop = () => {
        watch.close().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      };
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    });
}

/** Start the watch server the options describe and say where it listens. */
export async function runWatch(options: WatchCliOptions): Promise<RunningWatchServer> {
  const { startWatchServer } = await import("../watch/server/index.ts");
  try {
    const { allowHost, maxRunEvents, ...rest } = options;
    const watch = await startWatchServer({
      ...rest,
      allowedHosts: allowHost,
      ...(maxRunEvents !== undefined && { maxRunEvents }),
    });
    console.info(
      `forge watch on ${watch.tokenUrl} (runs in ${watch.store.dir}, ${watch.store.list().length} recorded); report to it with createWatchReporter({ url: "${watch.tokenUrl}" }), forge proxy --watch or forge worker --watch with that URL (its token is required to post)`,
    );
    return watch;
  } catch (error) {
    if (error instanceof Error && "code" in error && error.code === "EADDRINUSE") {
      const taken = new PortInUseError({
        kind: "port_in_use",
        port: options.port,
        message: `port ${options.port} on ${options.host} is already in use: stop what holds it, or pass --port <another> (--port 0 picks a free one).`,
      });
      taken.cause = error;
      throw taken;
    }
    throw error;
  }
}
