/**
 * `forge launch <agent> [options] [-- agent args…]` and `forge launch [options] -- <command> [args…]`:
 * a coding agent (or any command) run against a guardrail proxy that lives as long as it does.
 */
import { type Command, Option } from "commander";
import { z } from "zod";
import { AGENT_RECIPES, findAgentRecipe } from "./launch/agents.ts";
import type { LaunchTarget } from "./launch/launch.ts";
import { addBackendOptions, addGuardOptions } from "./proxy-command.ts";
import { checkBackendChoice, flagName, proxyCliOptionsObject } from "./proxy-options.ts";

/** Validated options of `forge launch`: `forge proxy`'s, less where it listens, plus `--log-file`. */
export const launchCliOptionsSchema = proxyCliOptionsObject
  .omit({ host: true, allowHost: true, quiet: true })
  .extend({
    port: z.coerce.number().int().min(0).max(65_535).default(0),
    logFile: z.string().min(1).optional(),
  })
  .superRefine(checkBackendChoice);
export type LaunchCliOptions = z.output<typeof launchCliOptionsSchema>;

const agentNames = () => Object.keys(AGENT_RECIPES).join(", ");

/** Add the `launch` subcommand to `program`. */
export function registerLaunchCommand(program: Command): Command {
  const command = program
    .command("launch")
    .description(
      `Run a coding agent (${agentNames()}) or, after --, any command against a forge proxy started for it on a free 127.0.0.1 port; its config is set for this run only, and the proxy stops when it exits`,
    )
    .argument("[agent]", `${agentNames()}; or, after --, any command`)
    .argument("[args...]", "arguments for the agent (after --)")
    .usage("<agent> [options] [-- agent args...]\n       forge launch [options] -- <command> [args...]");
  addBackendOptions(command)
    .option("--port <port>", "port of the proxy on 127.0.0.1 (0: a free one)", "0")
    .option("--log-file <path>", "append the proxy's access log and messages here (default: none)")
    .addOption(
      new Option("--log-format <format>", "access log format in --log-file")
        .choices(["text", "json"])
        .default("text"),
    );
  return addGuardOptions(command).action(
    async (agent: string | undefined, args: string[], raw: Record<string, unknown>, self: Command) => {
      const parsed = launchCliOptionsSchema.safeParse(raw);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        self.error(`error: ${flagName(issue?.path[0])}: ${issue?.message ?? "invalid options"}`);
        return;
      }
      const operands = agent === undefined ? [] : [agent, ...args];
      const target = launchTargetOf(operands, argsAfterDoubleDash(self));
      if ("error" in target) {
        self.error(`error: ${target.error}`);
        return;
      }
      const { launch } = await import("./launch/launch.ts");
      const status = await launch({
        target: target.target,
        args: target.args,
        proxy: { ...parsed.data, host: "127.0.0.1", allowHost: [], quiet: false },
        logFile: parsed.data.logFile,
      });
      process.exit(status);
    },
  );
}

/**
 * What the operands of `forge launch` ask for. `operands` are the positional arguments (the agent
 * and its arguments); `afterDoubleDash` the command-line words after `--`, if any. The agent named
 * before `--` must be a known one; a command that comes after `--` is run as it is.
 */
export function launchTargetOf(
  operands: readonly string[],
  afterDoubleDash: readonly string[] | undefined,
): { target: LaunchTarget; args: string[] } | { error: string } {
  const [first, ...rest] = operands;
  if (first === undefined) {
    return { error: `name an agent (${agentNames()}), or a command after --: forge launch -- <command>` };
  }
  if (afterDoubleDash !== undefined && afterDoubleDash.length === operands.length) {
    return { target: { kind: "command", file: first }, args: rest };
  }
  const recipe = findAgentRecipe(first);
  if (recipe === undefined) {
    return {
      error: `unknown agent '${first}': one of ${agentNames()}; run any other command with forge launch [options] -- ${first}`,
    };
  }
  return { target: { kind: "agent", recipe }, args: rest };
}

/** The words after the first `--` of the command line `command` was parsed from, if it has one. */
function argsAfterDoubleDash(command: Command): string[] | undefined {
  let root: Command = command;
  while (root.parent) root = root.parent;
  // commander keeps the argv it parsed on the root command (`rawArgs`), untyped.
  const rawArgs: unknown = (root as unknown as { rawArgs?: unknown }).rawArgs;
  if (!Array.isArray(rawArgs)) return undefined;
  const index = rawArgs.indexOf("--");
  return index === -1 ? undefined : rawArgs.slice(index + 1).map(String);
}
