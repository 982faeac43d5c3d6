/**
 * `forge mcp serve <registry>`: the workflows of a registry module served as MCP tools, over stdio
 * (the default: an MCP host starts this command) or Streamable HTTP (`--http`, 127.0.0.1 unless
 * `--host`, which off loopback needs `--key`).
 */
import type { Command } from "commander";
import { z } from "zod";
import { flagName } from "./proxy-options.ts";
import { loadRegistry } from "./queue-command.ts";

/** The environment variable `--key` defaults to, so the key stays out of process listings. */
export const FORGE_MCP_KEY_ENV = "FORGE_MCP_KEY";

/** Validated options of `forge mcp serve`. */
export const mcpServeCliOptionsSchema = z.object({
  http: z.boolean().default(false),
  host: z.string().min(1).default("127.0.0.1"),
  port: z.coerce.number().int().min(0).max(65_535).default(4180),
  key: z.string().min(1).optional(),
});

/** Add `mcp serve` to `program`. */
export function registerMcpCommands(program: Command): void {
  const mcp = program
    .command("mcp")
    .description("Serve forge workflows to MCP hosts (Claude Code, opencode, …)");
  mcp
    .command("serve")
    .description(
      "Serve a registry's workflows as MCP tools: each runs its guarded workflow and answers with the result (stdio by default; --http for Streamable HTTP)",
    )
    .argument(
      "<registry>",
      "a module whose default (or `registry`) export is defineRegistry({ workflows, runner })",
    )
    .option("--http", "serve Streamable HTTP at http://<host>:<port>/mcp instead of stdio")
    .option(
      "--host <host>",
      "with --http: the interface to listen on (off loopback --key is required)",
      "127.0.0.1",
    )
    .option("--port <port>", "with --http: the port (0: a free one)", "4180")
    .option(
      "--key <secret>",
      `with --http: the bearer key every request must carry (default: $${FORGE_MCP_KEY_ENV})`,
    )
    .action(async (registryPath: string, raw: Record<string, unknown>, command: Command) => {
      const parsed = mcpServeCliOptionsSchema.safeParse({
        ...raw,
        key: raw.key ?? (process.env[FORGE_MCP_KEY_ENV] || undefined),
      });
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        command.error(`error: ${flagName(issue?.path[0])}: ${issue?.message ?? "invalid options"}`);
        return;
      }
      const options = parsed.data;
      const registry = await loadRegistry(registryPath);
      const { serveMcp } = await import("../mcp/server/index.ts");
      const served = await serveMcp({
        workflows: registry.workflows,
        runner: registry.runner,
        // stdout is the protocol over stdio: every log line goes to stderr.
        onCallEnd: (event) =>
          console.error(
            `${event.tool} ${event.runId} ${event.outcome} in ${Math.round(event.durationMs)} ms${event.error ? `: ${event.error}` : ""}`,
          ),
        transport: options.http
          ? { type: "http", host: options.host, port: options.port, ...(options.key && { key: options.key }) }
          : { type: "stdio" },
      });
      const tools = [...registry.workflows.keys()].join(", ");
      console.error(
        served.url
          ? `forge mcp serving ${tools} at ${served.url}${options.key ? " (bearer key required)" : ""}`
          : `forge mcp serving ${tools} over stdio`,
      );
      const stop = (code = 0) => {
        served.close().then(
          () => process.exit(code),
          () => process.exit(1),
        );
      };
      process.once("SIGINT", () => stop());
      process.once("SIGTERM", () => stop());
      served.closed?.then(() => process.exit(0));
    });
}
