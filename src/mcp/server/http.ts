/**
 * Workflows over Streamable HTTP: a node:http server at `/mcp`, one SDK transport and one workflow
 * server per session, a bearer key checked before anything else, and the Host header held to the
 * bound address on loopback (DNS rebinding).
 */
import { createHash, randomUUID, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createWorkflowMcpServer, type WorkflowMcpServerOptions } from "./create-server.ts";
import { McpServeKeyRequiredError } from "./errors.ts";
import type { McpServerSdk } from "./sdk.ts";

/** Where and how the HTTP server listens. */
export interface McpHttpListenOptions {
  /** Default 127.0.0.1. Any other address needs `key`. */
  host?: string;
  /** Default 0: a free port (read it from the returned `url`). */
  port?: number;
  /** The bearer key every request must carry (`Authorization: Bearer <key>`); required off loopback. */
  key?: string;
}

/** A listening HTTP workflow server. */
export interface McpHttpListener {
  /** The MCP endpoint, e.g. `http://127.0.0.1:4180/mcp`. */
  url: string;
  close(): Promise<void>;
}

const LOOPBACK = new Set(["127.0.0.1", "::1", "localhost"]);

/** Whether `host` is a loopback address (only this machine can connect). */
export function isLoopbackHost(host: string): boolean {
  return LOOPBACK.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * Listen for MCP over Streamable HTTP.
 *
 * @throws {McpServeKeyRequiredError} for a host off loopback without `key`.
 */
export async function listenMcpHttp(
  serverOptions: WorkflowMcpServerOptions,
  listen: McpHttpListenOptions,
  sdk: McpServerSdk,
): Promise<McpHttpListener> {
  const host = listen.host ?? "127.0.0.1";
  if (!isLoopbackHost(host) && !listen.key) throw new McpServeKeyRequiredError(host);
  // Build one server first, so a workflow MCP cannot name fails here rather than per session.
  createWorkflowMcpServer(serverOptions, sdk);
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const expected = listen.key === undefined ? undefined : digest(`Bearer ${listen.key}`);
  let allowedHosts: string[] = [];

  const http = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) reply(response, 500, (error as Error)?.message ?? String(error));
      else response.end();
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (expected && !timingSafeEqual(digest(request.headers.authorization ?? ""), expected)) {
      response.setHeader("WWW-Authenticate", 'Bearer realm="forge-mcp"');
      return reply(response, 401, "Missing or wrong bearer key (Authorization: Bearer <key>)");
    }
    if (new URL(request.url ?? "/", "http://host").pathname !== "/mcp")
      return reply(response, 404, "The MCP endpoint is /mcp");
    const sessionId = request.headers["mcp-session-id"];
    const existing = typeof sessionId === "string" ? sessions.get(sessionId) : undefined;
    if (existing) return existing.handleRequest(request, response);
    if (sessionId !== undefined)
      return reply(response, 404, "Unknown or closed MCP session; initialize again");
    // A new session: the transport answers anything but an initialize request with an error.
    const transport = new sdk.StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, transport);
      },
      ...(allowedHosts.length > 0 && { enableDnsRebindingProtection: true, allowedHosts }),
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    const server = createWorkflowMcpServer(serverOptions, sdk);
    await server.connect(transport);
    await transport.handleRequest(request, response);
    if (transport.sessionId === undefined) await server.close();
  }

  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(listen.port ?? 0, host, () => {
      http.off("error", reject);
      resolve();
    });
  });
  const { port } = http.address() as AddressInfo;
  const urlHost = host.includes(":") ? `[${host}]` : host;
  if (isLoopbackHost(host)) allowedHosts = [`${urlHost}:${port}`, `localhost:${port}`, `127.0.0.1:${port}`];
  return {
    url: `http://${urlHost}:${port}/mcp`,
    async close() {
      await Promise.all([...sessions.values()].map((transport) => transport.close()));
      sessions.clear();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

function reply(response: ServerResponse, status: number, message: string): void {
  response.writeHead(status, { "content-type": "application/json" });
  response.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }));
}
