/** MCP servers' tools as the loop's `ToolDef`s: named, filtered, with effects from their annotations. */
import { WorkflowDefinitionError } from "../core/errors.ts";
import { defineTool, type ToolDef, type ToolEffects, toolSpecFromJsonSchema } from "../core/tools.ts";
import type { McpServerConnection, McpToolInfo } from "./connection.ts";
import { effectsFromAnnotations, isDestructive } from "./effects.ts";
import { assertNoCollision, exposedToolName, type NamedTool } from "./naming.ts";

/** Options of `mcpToolDefs` (and `McpServerConnection.toolDefs`). */
export interface McpToolDefsOptions {
  /** Name each tool `<server>_<tool>` (default false: the server's own names). */
  prefix?: boolean;
  /**
   * Which tools the model sees: the names it would see them under (after `prefix`), or a
   * predicate. A small model does best with only the tools its workflow needs. A listed name no
   * server offers is a `WorkflowDefinitionError`.
   */
  filter?: readonly string[] | ((tool: McpToolInfo, server: string) => boolean);
  /** Overrides the effects the annotations give, by the name the model sees. */
  effects?: Readonly<Record<string, ToolEffects>>;
  /**
   * Which tools' calls wait for a person's approval (docs/decisions/017): `true` (all), the names
   * the model sees them under, a predicate, or `"destructive"`: the tools whose annotations do not
   * say they are read-only or non-destructive (MCP's defaults: no hint counts as destructive).
   * Default: none, since annotations are hints an untrusted server may get wrong, and a workflow
   * that never waited should not start to. A listed name not among the chosen tools is a
   * `WorkflowDefinitionError`.
   * @example
   * mcpToolDefs(files, { needsApproval: ["write_file", "move_file"] })
   */
  needsApproval?:
    | boolean
    | "destructive"
    | readonly string[]
    | ((tool: McpToolInfo, server: string) => boolean);
}

/**
 * The tools of one or more connected MCP servers, as `ToolDef`s for a workflow, from each server's
 * current list. Each keeps its JSON Schema exactly as the server sent it (the model sees it as-is;
 * arguments are validated with its zod conversion); its effects follow its annotations (see
 * `effectsFromAnnotations`); its `timeoutMs` is its connection's. Each is made with `defineTool`,
 * so it runs as any tool does: the loop's one tool timer bounds a call (past `timeoutMs`, a
 * `ToolTimeoutError` tool error), and the call's signal, aborted by that timer or by cancelling the
 * run, cancels the request on the server; the call's idempotency key goes in `_meta`. An `isError`
 * result or a server error reaches the model as a tool error.
 *
 * The list is a snapshot: a workflow defined from it keeps these tools for its runs even when the
 * server announces `tools/list_changed`; a call to a tool the server has since removed is answered
 * with a `McpToolRemovedError` tool error. Build the next workflow from a fresh `mcpToolDefs`.
 *
 * @throws {McpToolNameCollisionError} when two tools would reach the model under one name.
 * @example
 * const tools = mcpToolDefs([github, files], { prefix: true, filter: ["github_search_issues", "files_read_file"] });
 */
export function mcpToolDefs(
  servers: McpServerConnection | readonly McpServerConnection[],
  options: McpToolDefsOptions = {},
): ToolDef[] {
  const connections = Array.isArray(servers) ? servers : [servers as McpServerConnection];
  const names = connections.map((connection) => connection.name);
  const twice = names.find((name, index) => names.indexOf(name) !== index);
  if (twice !== undefined) {
    throw new WorkflowDefinitionError(
      `Two MCP connections are both named '${twice}': give each server its own name`,
    );
  }
  const prefix = options.prefix ?? false;
  const { filter } = options;
  const candidates: (NamedTool & { info: McpToolInfo; connection: McpServerConnection })[] = [];
  for (const connection of connections) {
    for (const info of connection.tools) {
      const name = exposedToolName(connection.name, info.name, prefix);
      candidates.push({ server: connection.name, tool: info.name, name, info, connection });
    }
  }
  const chosen = candidates.filter((candidate) => {
    if (filter === undefined) return true;
    if (typeof filter === "function") return filter(candidate.info, candidate.server);
    return filter.includes(candidate.name);
  });
  if (Array.isArray(filter)) {
    const missing = filter.filter((name) => !candidates.some((candidate) => candidate.name === name));
    if (missing.length > 0) {
      throw new WorkflowDefinitionError(
        `MCP tool filter names ${missing.map((name) => `'${name}'`).join(", ")}, which no server offers${prefix ? "" : " (prefix is off)"}. Offered: ${candidates.map((candidate) => candidate.name).join(", ") || "(none)"}`,
      );
    }
  }
  assertNoCollision(chosen);
  assertKnownNames("effects", Object.keys(options.effects ?? {}), chosen);
  assertKnownNames("needsApproval", options.needsApproval, chosen);
  return chosen.map(({ info, connection, name, server }) => {
    const description = info.description ?? info.title ?? info.annotations?.title ?? "";
    const { timeoutMs } = connection;
    return defineTool({
      ...specOf(connection.name, info, name, description),
      execute: (args, { signal, idempotencyKey }) =>
        connection.callTool(info.name, args, { signal, idempotencyKey }),
      effects: options.effects?.[name] ?? effectsFromAnnotations(info.annotations),
      ...(timeoutMs !== undefined && { timeoutMs }),
      ...(approvalOf(options.needsApproval, info, name, server) && { needsApproval: true }),
    });
  });
}

/** Names an option gives (a list) that are not among the chosen tools: a `WorkflowDefinitionError`. */
function assertKnownNames(option: string, given: unknown, chosen: readonly NamedTool[]): void {
  if (!Array.isArray(given)) return;
  const unknown = (given as string[]).filter((name) => !chosen.some((candidate) => candidate.name === name));
  if (unknown.length > 0) {
    throw new WorkflowDefinitionError(
      `MCP ${option} given for ${unknown.map((name) => `'${name}'`).join(", ")}, not among the chosen tools: ${chosen.map((candidate) => candidate.name).join(", ") || "(none)"}`,
    );
  }
}

/** Whether calls to this tool wait for approval, by the `needsApproval` option. */
function approvalOf(
  rule: McpToolDefsOptions["needsApproval"],
  info: McpToolInfo,
  name: string,
  server: string,
): boolean {
  if (rule === undefined || typeof rule === "boolean") return rule === true;
  if (rule === "destructive") return isDestructive(info.annotations);
  if (typeof rule === "function") return rule(info, server) === true;
  return rule.includes(name);
}

/** The tool's spec; a name or schema the loop cannot take is an error naming the server and tool. */
function specOf(server: string, info: McpToolInfo, name: string, description: string) {
  try {
    return toolSpecFromJsonSchema(name, description, info.inputSchema);
  } catch (error) {
    throw new WorkflowDefinitionError(
      `MCP server '${server}', tool '${info.name}': ${error instanceof Error ? error.message : String(error)} (filter it out to use the server's other tools)`,
      { cause: error },
    );
  }
}
