/**
 * `npm run sim-model`: serve the fault-injecting OpenAI-compatible sim-model on 127.0.0.1, so CI
 * can measure guardrails offline and any other agent loop can be measured against the same faults.
 */
import type { Command } from "commander";
import { z } from "zod";
import { flagName } from "../../src/cli/proxy-options.ts";
import { DEFAULT_PROFILE, FAULT_PROFILES, profileByName, totalFaultRate } from "../sim-model/profiles.ts";
import { startSimModel } from "../sim-model/server.ts";

const simModelOptionsSchema = z.object({
  host: z.string().default("127.0.0.1"),
  port: z.coerce.number().int().min(0).max(65535).default(8089),
  profile: z.string().default(DEFAULT_PROFILE),
  seed: z.coerce.number().int().default(0),
  delayMs: z.coerce.number().int().nonnegative().default(0),
  contextWindow: z.boolean().default(true),
  listProfiles: z.boolean().default(false),
});

/** Add the `sim-model` command to `program`. */
export function registerSimModelCommand(program: Command): Command {
  return program
    .command("sim-model")
    .description(
      'Serve an OpenAI-compatible model that plays each eval scenario\'s reference solution with seeded faults (model "sim/<profile>/<scenario>/<seed>")',
    )
    .option("--host <host>", "interface to listen on", "127.0.0.1")
    .option("--port <port>", "port (0 = any free port)", "8089")
    .option(
      "--profile <name>",
      `default fault profile: ${Object.keys(FAULT_PROFILES).join(", ")}`,
      DEFAULT_PROFILE,
    )
    .option("--seed <n>", "default seed for requests whose model names none", "0")
    .option("--delay-ms <n>", "latency added per request", "0")
    .option("--no-context-window", "accept requests over the scenario's context budget")
    .option("--list-profiles", "print the profiles and their rates, then exit")
    .action(async (rawOptions: Record<string, unknown>, command: Command) => {
      const parsed = simModelOptionsSchema.safeParse(rawOptions);
      if (!parsed.success) {
        const problems = parsed.error.issues.map((issue) => `${flagName(issue.path[0])}: ${issue.message}`);
        command.error(`error: ${problems.join("; ")}`, { exitCode: 2 });
      }
      const options = parsed.data;
      if (options.listProfiles) {
        for (const profile of Object.values(FAULT_PROFILES)) {
          const rates = Object.entries(profile.rates)
            .map(([kind, rate]) => `${kind}=${rate}`)
            .join(" ");
          process.stdout.write(
            `${profile.name}\t${totalFaultRate(profile).toFixed(2)}\t${rates || "-"}\t${profile.description}\n`,
          );
        }
        return;
      }
      try {
        profileByName(options.profile);
      } catch (error) {
        command.error(`error: ${(error as Error).message}`, { exitCode: 2 });
      }
      const server = await startSimModel({
        host: options.host,
        port: options.port,
        profile: options.profile,
        seed: options.seed,
        delayMs: options.delayMs,
        enforceContextWindow: options.contextWindow,
      });
      process.stdout.write(
        `sim-model listening on ${server.url} (profile ${options.profile}; model "sim/<profile>/<scenario>/<seed>")\n`,
      );
      const shutdown = async () => {
        await server.close();
        process.exit(0);
      };
      process.once("SIGINT", shutdown);
      process.once("SIGTERM", shutdown);
    });
}
