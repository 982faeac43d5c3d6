/** The names MCP tools reach the model under: prefixed or not, filtered, and never two alike. */
import { McpToolNameCollisionError } from "./errors.ts";

/** A server name usable as a tool-name prefix: letters, digits, `_` and `-`. */
export const SERVER_NAME = /^[A-Za-z0-9_-]{1,48}$/;

/**
 * The name the model sees for `tool` of `server`: `<server>_<tool>` with `prefix`, else the tool's
 * own name; characters a tool name may not hold (`.`, `/`, spaces, …) become `_`.
 */
export function exposedToolName(server: string, tool: string, prefix: boolean): string {
  const name = prefix ? `${server}_${tool}` : tool;
  return name.replace(/[^A-Za-z0-9_-]/g, "_");
}

/** One tool on its way to a workflow: where it comes from and the name it will have. */
export interface NamedTool {
  server: string;
  tool: string;
  name: string;
}

/**
 * Throws `McpToolNameCollisionError` naming both sources when two tools would share a name.
 * @example
 * assertNoCollision([{ server: "a", tool: "b_c", name: "a_b_c" }, { server: "a_b", tool: "c", name: "a_b_c" }]); // throws
 */
export function assertNoCollision(tools: readonly NamedTool[]): void {
  const seen = new Map<string, NamedTool>();
  for (const entry of tools) {
    const earlier = seen.get(entry.name);
    if (earlier) throw new McpToolNameCollisionError(entry.name, earlier, entry);
    seen.set(entry.name, entry);
  }
}
