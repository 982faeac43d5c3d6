/** `serveMcp`: a registry's workflows as MCP tools, over stdio or Streamable HTTP. */
import type { Workflow } from "../../core/workflow.ts";
import { createWorkflowMcpServer, type WorkflowMcpServerOptions } from "./create-server.ts";
import { listenMcpHttp, type McpHttpListenOptions } from "./http.ts";
import { loadMcpServerSdk } from "./sdk.ts";

/** Options of `serveMcp`. */
export interface ServeMcpOptions extends Omit<WorkflowMcpServerOptions, "workflows"> {
  /** The workflows to offer, one tool each: a list, or a registry's map (`defineRegistry(…).workflows`). */
  workflows: readonly Workflow[] | ReadonlyMap<string, Workflow>;
  /** Default stdio (this process's stdin and stdout: log to stderr only). */
  transport?: { type: "stdio" } | ({ type: "http" } & McpHttpListenOptions);
}

/** A running workflow server. */
export interface ServedMcp {
  /** The HTTP endpoint (`…/mcp`); absent over stdio. */
  url?: string;
  /** Settles when the stdio client has gone (stdin ended) or `close` was called; absent over HTTP. */
  closed?: Promise<void>;
  /** Stop serving: close the sessions (runs under way are cancelled) and the listener. */
  close(): Promise<void>;
}

/**
 * Serve workflows as MCP tools: each is a tool named after it, taking `{ message, promptVars? }`,
 * that runs the guarded workflow and answers with its result, with a progress notification per
 * tool call, client cancellation aborting the run, and approval-gated steps asked through
 * elicitation (docs/guides/serving-workflows-over-mcp.md).
 *
 * @throws {McpSdkMissingError} when `@modelcontextprotocol/sdk` is not installed.
 * @throws {McpServeKeyRequiredError} over HTTP off loopback without a `key`.
 * @throws {McpWorkflowToolNameError} for a workflow name MCP does not accept.
 * @example
 * const registry = defineRegistry({ workflows: [weather], runner });
 * const served = await serveMcp({ workflows: registry.workflows, runner: registry.runner, transport: { type: "http", port: 4180 } });
 * console.error(`MCP at ${served.url}`);
 */
export async function serveMcp(options: ServeMcpOptions): Promise<ServedMcp> {
  const sdk = await loadMcpServerSdk();
  const { transport = { type: "stdio" }, ...rest } = options;
  const workflows =
    "values" in options.workflows && !Array.isArray(options.workflows)
      ? [...options.workflows.values()]
      : [...(options.workflows as readonly Workflow[])];
  const serverOptions: WorkflowMcpServerOptions = { ...rest, workflows };
  if (transport.type === "http") return listenMcpHttp(serverOptions, transport, sdk);
  const server = createWorkflowMcpServer(serverOptions, sdk);
  const stdio = new sdk.StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    stdio.onclose = resolve;
  });
  await server.connect(stdio);
  // The client closing its end of the pipe ends the session (the SDK's transport only reads data).
  process.stdin.once("end", () => void server.close());
  return {
    closed,
    async close() {
      await server.close();
      await closed;
    },
  };
}
