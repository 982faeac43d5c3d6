/** Loading the server side of the MCP SDK (an optional peer) on first use, as `../sdk.ts` loads its client side. */
import { McpSdkMissingError } from "../errors.ts";
import { isMcpSdkMissing } from "../sdk.ts";

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
  try {
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
  } catch (error) {
    throw isMcpSdkMissing(error) ? new McpSdkMissingError({ cause: error }) : error;
  }
}
