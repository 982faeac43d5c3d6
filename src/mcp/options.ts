/** The options of `connectMcpServer`, checked at the boundary. */
import { z } from "zod";
import { SERVER_NAME } from "./naming.ts";

const milliseconds = z.number().int().positive();

const base = {
  name: z.string().regex(SERVER_NAME, "use 1-48 letters, digits, '_' or '-' (it may prefix tool names)"),
  timeoutMs: milliseconds.optional(),
  connectTimeoutMs: milliseconds.optional(),
  onError: z.function().optional(),
};

/** A stdio server (`command`) or a Streamable HTTP one (`url`), never both. */
export const mcpServerOptionsSchema = z.union([
  z.object({
    ...base,
    command: z.string().min(1),
    args: z.array(z.string()).optional(),
    env: z.record(z.string(), z.string()).optional(),
    cwd: z.string().optional(),
    stderr: z.enum(["inherit", "ignore", "pipe"]).optional(),
    url: z.undefined().optional(),
  }),
  z.object({
    ...base,
    url: z.union([z.url({ protocol: /^https?$/ }), z.instanceof(URL)]),
    headers: z.record(z.string(), z.string()).optional(),
    command: z.undefined().optional(),
  }),
]);

/** Throws `RangeError` (a bad option, ADR 031) naming each problem when `options` cannot describe a server. */
export function assertMcpServerOptions(options: unknown): void {
  const parsed = mcpServerOptionsSchema.safeParse(options);
  if (parsed.success) return;
  const name = (options as { name?: unknown } | null)?.name;
  const issues = parsed.error.issues
    .map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "(options)"}: ${issue.message}`)
    .join("; ");
  throw new RangeError(
    `MCP server ${JSON.stringify(name)}: give { name, command, args?, env? } (stdio) or { name, url, headers? } (Streamable HTTP); ${issues}`,
  );
}
