/** Loading the server side of the MCP SDK (an optional peer) on first use, as `../sdk.ts` loads its client side. */
import { importPeers } from "../../core/optional-peer.ts";
import { MCP_SDK_PEER, McpSdkMissingError } from "../errors.ts";

/** The parts of `@modelcontextprotocol/sdk` the workflow server uses. */
export interface McpServerSdk {
  Server: typeof import("@modelcontextprotocol/sdk/server/index.js").Server;
  StdioServerTransport: typeof import("@modelcontextprotocol/sdk/server/stdio.js").StdioServerTransport;
  StreamableHTTPServerTransport: typeof import("@modelcontextprotocol/sdk/server/streamableHttp.js").StreamableHTTPServerTransport;
  types: typeof import("@modelcontextprotocol/sdk/types.js");
}

/**
 * The SDK's server modules.
 *
 * @throws {McpSdkMissingError} when the package is not installed (the error names the install command).
 */
export async function loadMcpServerSdk(): Promise<McpServerSdk> {
  const [sdk] = await importPeers(
    [{ ...MCP_SDK_PEER, load: importServerSdk }],
    (_missing, cause) => new McpSdkMissingError({ cause }),
  );
  return sdk;
}

async function importServerSdk(): Promise<McpServerSdk> {
  const [server, stdio, http, types] = await Promise.all([
    import("@modelcontextprotocol/sdk/server/index.js"),
    import("@modelcontextprotocol/sdk/server/stdio.js"),
    import("@modelcontextprotocol/sdk/server/streamableHttp.js"),
    import("@modelcontextprotocol/sdk/types.js"),
  ]);
  return {
    Server: server.Server,
    StdioServerTransport: stdio.StdioServerTransport,
    StreamableHTTPServerTransport: http.StreamableHTTPServerTransport,
    types,
  };
}
