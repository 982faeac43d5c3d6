/**
 * Loading the MCP SDK, an optional peer: imported on first use, so importing `forge-guardrails/mcp`
 * stays cheap, and a missing package is a typed error naming the install command.
 */
import { importPeers } from "../core/optional-peer.ts";
import { MCP_SDK_PEER, McpSdkMissingError } from "./errors.ts";

/** The parts of `@modelcontextprotocol/sdk` this module uses. */
export interface McpSdk {
  Client: typeof import("@modelcontextprotocol/sdk/client/index.js").Client;
  StdioClientTransport: typeof import("@modelcontextprotocol/sdk/client/stdio.js").StdioClientTransport;
  getDefaultEnvironment: typeof import("@modelcontextprotocol/sdk/client/stdio.js").getDefaultEnvironment;
  StreamableHTTPClientTransport: typeof import("@modelcontextprotocol/sdk/client/streamableHttp.js").StreamableHTTPClientTransport;
  ToolListChangedNotificationSchema: typeof import("@modelcontextprotocol/sdk/types.js").ToolListChangedNotificationSchema;
}

/** Imports the SDK's modules; a test passes another to simulate a missing package. */
export type McpSdkImporter = () => Promise<McpSdk>;

/** The SDK's modules, from the installed `@modelcontextprotocol/sdk`. */
export const importInstalledMcpSdk: McpSdkImporter = async () => {
  const [client, stdio, http, types] = await Promise.all([
    import("@modelcontextprotocol/sdk/client/index.js"),
    import("@modelcontextprotocol/sdk/client/stdio.js"),
    import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
    import("@modelcontextprotocol/sdk/types.js"),
  ]);
  return {
    Client: client.Client,
    StdioClientTransport: stdio.StdioClientTransport,
    getDefaultEnvironment: stdio.getDefaultEnvironment,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    ToolListChangedNotificationSchema: types.ToolListChangedNotificationSchema,
  };
};

/**
 * The MCP SDK's modules.
 *
 * @throws {McpSdkMissingError} when the package is not installed (the error names the install command).
 */
export async function loadMcpSdk(importSdk: McpSdkImporter = importInstalledMcpSdk): Promise<McpSdk> {
  const [sdk] = await importPeers(
    [{ ...MCP_SDK_PEER, load: importSdk }],
    (_missing, cause) => new McpSdkMissingError({ cause }),
  );
  return sdk;
}
