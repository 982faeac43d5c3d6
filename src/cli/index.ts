/** The `forge` command line: a commander program whose subcommands live in their own files. */
import { readFileSync } from "node:fs";
import { Command } from "commander";
import { z } from "zod";
import { registerLaunchCommand } from "./launch-command.ts";
import { registerMcpCommands } from "./mcp-command.ts";
import { registerProxyCommand } from "./proxy-command.ts";
import { registerQueueCommands } from "./queue-command.ts";
import { FORGE_DEBUG_ENV, runProgram } from "./run-program.ts";
import { registerWatchCommand } from "./watch-command.ts";

const packageJsonSchema = z.object({ version: z.string().min(1) });

/**
 * The version in the package's `package.json`. The relative URL holds for this file
 * (`src/cli/index.ts`) and for its build (`dist/cli/index.js`) alike.
 */
export function packageVersion(): string {
  const text = readFileSync(new URL("../../package.json", import.meta.url), "utf8");
  return packageJsonSchema.parse(JSON.parse(text)).version;
}

/**
 * Build the `forge` program with every subcommand registered. Add a subcommand by writing a
 * `register…Command(program)` in its own file and calling it here. The eval harness and the
 * sim-model are repository commands (`npm run eval`, `npm run sim-model`), not part of it.
 */
export function createProgram(): Command {
  const program = new Command()
    .name("forge")
    .description("forge-guardrails: reliable tool calling for self-hosted LLMs")
    .version(packageVersion(), "-V, --version", "print the version")
    .option("--verbose", `print the stack trace of an error (also ${FORGE_DEBUG_ENV}=1)`)
    .showHelpAfterError();
  registerProxyCommand(program);
  registerLaunchCommand(program);
  registerWatchCommand(program);
  registerQueueCommands(program);
  registerMcpCommands(program);
  return program;
}

/**
 * Run the CLI with `argv` (as `process.argv`: node, script, then arguments) and exit on errors:
 * 2 for a usage error, 1 with one line on stderr for a runtime error.
 */
export async function runCli(argv: readonly string[] = process.argv): Promise<void> {
  await runProgram(createProgram(), argv);
}
