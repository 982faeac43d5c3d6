/**
 * The repository's own command line, `forge-eval`: `eval` (run, worker, report, list, replay) and
 * `sim-model`. eval/ is not shipped, so these are not `forge` subcommands.
 */
import { Command } from "commander";
import { FORGE_DEBUG_ENV } from "../../src/cli/run-program.ts";
import { registerEvalCommand } from "./eval-command.ts";
import { registerSimModelCommand } from "./sim-model-command.ts";

/**
 * The usage line as a user types it: `npm run eval -- report [options] <files...>` rather than
 * commander's `forge-eval eval report …`.
 */
export function npmRunUsage(command: Command): string {
  const names: string[] = [];
  for (let ancestor: Command | null = command; ancestor?.parent; ancestor = ancestor.parent) {
    names.unshift(ancestor.name());
  }
  const [script, ...rest] = names;
  if (script === undefined) return `tsx eval/cli/main.ts ${command.usage()}`;
  return ["npm run", script, "--", ...rest, command.usage()].join(" ");
}

/** Build the `forge-eval` program with the `eval` and `sim-model` commands. */
export function createEvalProgram(): Command {
  const program = new Command()
    .name("forge-eval")
    .description("forge-guardrails' eval harness and sim-model (repository commands, not shipped)")
    .option("--verbose", `print the stack trace of an error (also ${FORGE_DEBUG_ENV}=1)`)
    .configureHelp({ commandUsage: npmRunUsage })
    .showHelpAfterError();
  registerEvalCommand(program);
  registerSimModelCommand(program);
  return program;
}
