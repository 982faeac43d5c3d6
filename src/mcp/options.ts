/**
 * The options of `connectMcpServer`: one zod schema, checked at the boundary, with the defaults;
 * the option types are inferred from it (`z.input`), so they cannot drift from what is checked.
 */
import { z } from "zod";
import { SERVER_NAME } from "./naming.ts";

const milliseconds = z.number().int().positive();

/** What every connection takes. */
export const mcpServerBaseOptionsSchema = z.object({
  /**
   * The server's name: in errors, and the prefix of its tool names with `prefix: true`
   * (letters, digits, `_` and `-`).
   */
  name: z.string().regex(SERVER_NAME, "use 1-48 letters, digits, '_' or '-' (it may prefix tool names)"),
  /**
   * How long one call of its tools may run in a workflow (ms; default 60 000): it becomes each
   * tool's `timeoutMs`, so the loop's one tool timer bounds the call (a `ToolTimeoutError` tool
   * error, and the request is cancelled on the server). A direct `callTool` is bounded by its
   * `signal` only.
   */
  timeoutMs: milliseconds.default(60_000),
  /** How long connecting and listing the tools may take (ms; default 30 000). */
  connectTimeoutMs: milliseconds.default(30_000),
  /** Receives a failed refresh of the tool list (the previous list is kept). */
  onError: z
    .custom<(error: unknown) => void>((value) => typeof value === "function", "must be a function")
    .optional(),
});

/** A server run as a child process, spoken to over its stdin and stdout. */
export const mcpStdioServerOptionsSchema = mcpServerBaseOptionsSchema.extend({
  command: z.string().min(1),
  args: z.array(z.string()).readonly().optional(),
  /** Added to the SDK's default environment (PATH, HOME, …), not replacing it. */
  env: z.record(z.string(), z.string()).readonly().optional(),
  cwd: z.string().optional(),
  /** The child's stderr (default `"inherit"`). */
  stderr: z.enum(["inherit", "ignore", "pipe"]).default("inherit"),
  url: z.undefined().optional(),
});

/** A server reached over Streamable HTTP. */
export const mcpHttpServerOptionsSchema = mcpServerBaseOptionsSchema.extend({
  url: z.union([z.url({ protocol: /^https?$/ }), z.instanceof(URL)]),
  /** Sent with every request (authorization, …). */
  headers: z.record(z.string(), z.string()).readonly().optional(),
  command: z.undefined().optional(),
});

/** A stdio server (`command`) or a Streamable HTTP one (`url`), never both. */
export const mcpServerOptionsSchema = z.union([mcpStdioServerOptionsSchema, mcpHttpServerOptionsSchema]);

/** What every connection takes (see {@link mcpServerBaseOptionsSchema}). */
export type McpServerBaseOptions = z.input<typeof mcpServerBaseOptionsSchema>;
/** A server run as a child process, spoken to over its stdin and stdout. */
export type McpStdioServerOptions = z.input<typeof mcpStdioServerOptionsSchema>;
/** A server reached over Streamable HTTP. */
export type McpHttpServerOptions = z.input<typeof mcpHttpServerOptionsSchema>;
/** Where the server is: a command to run (stdio) or a URL (Streamable HTTP). */
export type McpServerOptions = z.input<typeof mcpServerOptionsSchema>;
/** The options once checked, defaults filled in. */
export type McpServerSettings = z.output<typeof mcpServerOptionsSchema>;

/**
 * The options checked, with their defaults.
 *
 * @throws {RangeError} naming each problem when `options` cannot describe a server (a bad option, ADR 031).
 */
export function parseMcpServerOptions(options: unknown): McpServerSettings {
  // Checked against the kind it names (a `url`: Streamable HTTP, else stdio), so each issue is
  // reported at its option rather than as one "Invalid input" for the union.
  const http = (options as { url?: unknown } | null)?.url !== undefined;
  const parsed = (http ? mcpHttpServerOptionsSchema : mcpStdioServerOptionsSchema).safeParse(options);
  if (parsed.success) return parsed.data;
  const name = (options as { name?: unknown } | null)?.name;
  const issues = parsed.error.issues
    .map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "(options)"}: ${issue.message}`)
    .join("; ");
  throw new RangeError(
    `MCP server ${JSON.stringify(name)}: give { name, command, args?, env? } (stdio) or { name, url, headers? } (Streamable HTTP); ${issues}`,
  );
}

/** Throws `RangeError` (a bad option, ADR 031) naming each problem when `options` cannot describe a server. */
export function assertMcpServerOptions(options: unknown): void {
  parseMcpServerOptions(options);
}
