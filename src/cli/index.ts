/** The `forge` command line: a commander program whose subcommands live in their own files. */
import { Command } from "commander";
import { registerEvalCommand } from "./eval-command.ts";
import { registerProxyCommand } from "./proxy-command.ts";
import { registerSimModelCommand } from "./sim-model-command.ts";

/**
 * Build the `forge` program with every subcommand registered. Add a subcommand by writing a
 * `register…Command(program)` in its own file and calling it here.
 */
export function createProgram(): Command {
  const program = new Command()
    .name("forge")
    .description("forge-guardrails: reliable tool calling for self-hosted LLMs")
    .showHelpAfterError();
  registerProxyCommand(program);
  registerEvalCommand(program);
  registerSimModelCommand(program);
  return program;
}

/** Run the CLI with `argv` (as `process.argv`: node, script, then arguments). */
export async function runCli(argv: readonly string[] = process.argv): Promise<void> {
  await createProgram().parseAsync([...argv]);
}
