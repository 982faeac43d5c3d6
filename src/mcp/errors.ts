/**
 * The errors of `forge-guardrails/mcp`: a missing SDK, tool names that collide across servers, and
 * the tool errors a call reports back to the model on the tool channel. Those are the tool's own
 * failures, plain `Error`s (ADR 031); a call past its `timeoutMs` is the loop's `ToolTimeoutError`.
 */
import { ForgeError } from "../core/errors.ts";
import { type OptionalPeer, OptionalPeerMissingError, peerInstallCommand } from "../core/optional-peer.ts";

/** The MCP SDK, an optional peer. */
export const MCP_SDK_PEER: OptionalPeer = { name: "@modelcontextprotocol/sdk", major: 1 };

/** The command that installs the MCP SDK next to forge-guardrails. */
export const MCP_SDK_INSTALL = peerInstallCommand([MCP_SDK_PEER]);

/**
 * Thrown when `@modelcontextprotocol/sdk`, an optional peer dependency that only
 * `forge-guardrails/mcp` needs, is not installed.
 */
export class McpSdkMissingError extends OptionalPeerMissingError {
  constructor(options?: ErrorOptions) {
    super(
      [MCP_SDK_PEER],
      [MCP_SDK_PEER.name],
      "forge-guardrails/mcp connects to MCP servers with it",
      options,
    );
  }
}

/** Two MCP tools would reach the model under one name. Rename a server, or turn `prefix` on. */
export class McpToolNameCollisionError extends ForgeError {
  /** The name the model would see twice. */
  readonly toolName: string;
  /** The servers (as `server/tool`) that both offer it, in the order they were given. */
  readonly sources: readonly [string, string];
  constructor(
    toolName: string,
    first: { server: string; tool: string },
    second: { server: string; tool: string },
  ) {
    const same = first.server === second.server;
    super(
      `MCP tool name collision: '${toolName}' is offered by server '${first.server}' (tool '${first.tool}') and ${same ? "again by the same server" : `by server '${second.server}'`} (tool '${second.tool}'). ` +
        (same
          ? "Filter one of them out."
          : "Use prefix: true (names become <server>_<tool>), give the servers other names, or filter one of them out."),
    );
    this.toolName = toolName;
    this.sources = [`${first.server}/${first.tool}`, `${second.server}/${second.tool}`];
  }
}

/**
 * An MCP tool answered with `isError: true`. Thrown from the tool's `execute`, so the loop feeds its
 * message (the result's text) back to the model as a tool error, as for any throwing tool.
 */
export class McpToolError extends Error {
  /** The server's name. */
  readonly server: string;
  /** The tool's name on that server. */
  readonly tool: string;
  /** The `structuredContent` of the error result, when it had one. */
  readonly structuredContent: Record<string, unknown> | undefined;
  constructor(server: string, tool: string, message: string, structuredContent?: Record<string, unknown>) {
    super(message);
    this.name = "McpToolError";
    this.server = server;
    this.tool = tool;
    this.structuredContent = structuredContent;
  }
}

/** A tool of a workflow was removed from its server (a `tools/list_changed` refresh no longer lists it). */
export class McpToolRemovedError extends Error {
  readonly server: string;
  readonly tool: string;
  constructor(server: string, tool: string, available: readonly string[]) {
    super(
      `'${tool}' is no longer offered by MCP server '${server}'. Its tools now: ${available.length > 0 ? available.join(", ") : "(none)"}`,
    );
    this.name = "McpToolRemovedError";
    this.server = server;
    this.tool = tool;
  }
}
