/** How an MCP tool's annotations decide what a resumed run may do with an interrupted call. */
import type { ToolEffects } from "../core/tools.ts";

/** The behaviour hints an MCP server may give a tool (`Tool.annotations`). Hints, not guarantees. */
export interface McpToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/**
 * The loop's `effects` for an MCP tool:
 * - `readOnlyHint: true` → `"none"` (reads only: re-run after a crash);
 * - else `idempotentHint: true` → `"idempotent"` (re-run: a repeated call has no further effect,
 *   destructive or not);
 * - else, `destructiveHint` or no hint at all → `"unsafe"`: a call whose outcome is unknown after a
 *   crash is never re-run; the model is told so instead. MCP's own defaults assume a tool may
 *   write, and so does this.
 */
export function effectsFromAnnotations(annotations: McpToolAnnotations | undefined): ToolEffects {
  if (annotations?.readOnlyHint === true) return "none";
  if (annotations?.idempotentHint === true) return "idempotent";
  return "unsafe";
}

/**
 * Whether an MCP tool may destroy something, by MCP's defaults: not `readOnlyHint`, and
 * `destructiveHint` not false (a tool with no hints counts as destructive). For
 * `needsApproval: "destructive"`.
 */
export function isDestructive(annotations: McpToolAnnotations | undefined): boolean {
  return annotations?.readOnlyHint !== true && annotations?.destructiveHint !== false;
}
