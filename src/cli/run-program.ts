/**
 * Running a commander program with the exit codes every forge command shares: 0 after `--help` or
 * `--version`, 2 for a usage error (commander has printed its line and the usage), 1 for a
 * runtime error, printed as one line without a stack trace.
 */
import { type Command, CommanderError } from "commander";
import { ForgeError } from "../core/errors.ts";

/** Exit status of a usage error: an unknown option, a missing argument, an invalid value. */
export const USAGE_EXIT_CODE = 2;

/** Exit status of an error while running: a missing binary, a taken port, a missing file. */
export const RUNTIME_EXIT_CODE = 1;

/** Environment variable that, set to `1`, prints the stack of a runtime error (like `--verbose`). */
export const FORGE_DEBUG_ENV = "FORGE_DEBUG";

/**
 * A runtime error that names its own exit status, e.g. 127 for a command that is not installed
 * (`forge launch`); printed in one line like any other.
 */
export class ExitStatusError extends ForgeError {
  constructor(
    readonly exitCode: number,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * The exit status for an error thrown out of `program.parseAsync` when every command has
 * `exitOverride()`: commander's own errors keep 0 (help, version) or become 2; an
 * `ExitStatusError` has its own; anything else is 1.
 */
export function exitCodeOf(error: unknown): number {
  if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : USAGE_EXIT_CODE;
  if (error instanceof ExitStatusError) return error.exitCode;
  return RUNTIME_EXIT_CODE;
}

/**
 * The text printed for a runtime error: the first line of its message, prefixed by the program's
 * name (the lines after it, a server's last output, are in that server's log already); with
 * `verbose`, its stack and its causes' instead.
 */
export function formatRuntimeError(programName: string, error: unknown, verbose: boolean): string {
  if (!(error instanceof Error)) return `${programName}: ${String(error)}`;
  if (!verbose) return `${programName}: ${error.message.split("\n", 1)[0]}`;
  const lines = [`${programName}: ${error.stack ?? error.message}`];
  for (let cause = error.cause; cause !== undefined; ) {
    lines.push(`Caused by: ${cause instanceof Error ? (cause.stack ?? cause.message) : String(cause)}`);
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  return lines.join("\n");
}

/**
 * Parse `argv` with `program` and exit with the shared codes. Usage errors (commander's, or an
 * action's `command.error(…)`) exit 2 after commander printed them; a runtime error thrown by an
 * action prints one line and exits 1. The program's `--verbose` option, or `FORGE_DEBUG=1`,
 * prints the stack too. Resolves when an action leaves something running (a server).
 * @example
 * ```ts
 * const program = new Command("forge").option("--verbose", "print the stack of an error");
 * program.command("hello").action(() => {
 *   throw new Error("no greeting configured");
 * });
 * await runProgram(program, process.argv); // `forge hello`: "forge: no greeting configured", exit 1
 * ```
 */
export async function runProgram(program: Command, argv: readonly string[]): Promise<void> {
  throwInsteadOfExiting(program);
  try {
    await program.parseAsync([...argv]);
  } catch (error) {
    const code = exitCodeOf(error);
    if (!(error instanceof CommanderError)) {
      const verbose = program.opts().verbose === true || process.env[FORGE_DEBUG_ENV] === "1";
      process.stderr.write(`${formatRuntimeError(program.name(), error, verbose)}\n`);
    }
    process.exit(code);
  }
}

// Commander copies exitOverride to subcommands only when they are created, so set it on each.
function throwInsteadOfExiting(command: Command): void {
  command.exitOverride();
  for (const subcommand of command.commands) throwInsteadOfExiting(subcommand);
}
