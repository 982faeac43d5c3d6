/**
 * One MCP server, connected over stdio (a child process) or Streamable HTTP: its tool list, kept
 * current through `notifications/tools/list_changed`, and calls bounded by the caller's signal (in
 * a workflow the tool's, which the loop's one tool timer aborts). The public face is the
 * `McpServerConnection` interface; the class over the SDK's `Client` stays inside this module.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JsonSchema, ToolDef } from "../core/tools.ts";
import type { McpToolAnnotations } from "./effects.ts";
import { McpToolRemovedError } from "./errors.ts";
import { type McpServerOptions, type McpServerSettings, parseMcpServerOptions } from "./options.ts";
import { callResultValue, type McpCallResult } from "./result.ts";
import { loadMcpSdk, type McpSdk } from "./sdk.ts";
import { type McpToolDefsOptions, mcpToolDefs } from "./tool-defs.ts";

/** A tool as an MCP server lists it. */
export interface McpToolInfo {
  /** The tool's name on its server. */
  name: string;
  title?: string;
  description?: string;
  /** The JSON Schema of its arguments, exactly as the server sent it. */
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  annotations?: McpToolAnnotations;
}

/** Options of a direct `callTool`. */
export interface McpCallOptions {
  /**
   * Cancels the call (the server is sent `notifications/cancelled`); the call's only bound. In a
   * workflow it is the tool's call signal, which the loop aborts at the tool's `timeoutMs`; outside
   * one, pass `AbortSignal.timeout(ms)` to bound a call.
   */
  signal?: AbortSignal;
  /** Sent as `_meta["forge-guardrails/idempotencyKey"]`, for servers that deduplicate repeated calls. */
  idempotencyKey?: string;
}

/**
 * A connected MCP server, from `connectMcpServer`. Its tool list is read on connect and re-read on
 * every `notifications/tools/list_changed`; `toolDefs()` turns the current list into `ToolDef`s.
 * Close it when done (`await using` closes it too).
 */
export interface McpServerConnection extends AsyncDisposable {
  /** The server's name, as given. */
  readonly name: string;
  /** Each of its tools' `timeoutMs` (ms), from the options' `timeoutMs`. */
  readonly timeoutMs: number;
  /** The server's tools as last listed. */
  readonly tools: readonly McpToolInfo[];
  /** The child process's id for a stdio server while it runs; `null` otherwise. */
  readonly pid: number | null;
  /** Whether `close()` was called. */
  readonly closed: boolean;
  /**
   * Re-read the tool list (all pages). Called on connect and on every `tools/list_changed`;
   * listeners of `onToolsChanged` then receive the new list. Concurrent refreshes run one after
   * the other, so the last one listed wins.
   */
  refreshTools(): Promise<readonly McpToolInfo[]>;
  /**
   * Call `listener` with the new list after each refresh. A workflow already defined keeps the
   * `ToolDef`s it was given; build the next one from `toolDefs()`.
   * @returns a function that removes the listener.
   */
  onToolsChanged(listener: (tools: readonly McpToolInfo[]) => void): () => void;
  /** The current tools as `ToolDef`s (see {@link mcpToolDefs}). */
  toolDefs(options?: McpToolDefsOptions): ToolDef[];
  /**
   * Call a tool by its name on the server, bounded by `signal` only (no timer of its own). Resolves
   * with its `structuredContent` when it has one, else the text of its content.
   *
   * @throws {McpToolError} for an `isError` result (its text as the message).
   * @throws {McpToolRemovedError} when the server no longer lists the tool.
   * @throws the signal's reason when `signal` aborts it.
   */
  callTool(tool: string, args: Record<string, unknown>, options?: McpCallOptions): Promise<unknown>;
  /** Close the connection (a stdio server's process is ended: stdin closed, then SIGTERM, then SIGKILL). */
  close(): Promise<void>;
}

/**
 * The SDK's own per-request timer, set to the longest delay `setTimeout` takes (about 24.8 days) so
 * it never fires: a call's one timer is the loop's, at the tool's `timeoutMs` (the SDK has no way
 * to turn its timer off, and would otherwise cut every call at 60 s).
 */
const SDK_TIMER_NEVER_MS = 2_147_483_647;

/**
 * Connect to an MCP server and list its tools. Close it when done (`await using` closes it too);
 * for stdio, closing ends the child process.
 *
 * @throws {McpSdkMissingError} when `@modelcontextprotocol/sdk` is not installed.
 * @throws {RangeError} when the options describe no server (each problem named; a bad option, ADR 031).
 * @example
 * await using files = await connectMcpServer({
 *   name: "files",
 *   command: "npx",
 *   args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"],
 * });
 * await using search = await connectMcpServer({ name: "search", url: "http://127.0.0.1:3000/mcp" });
 * const workflow = defineWorkflow({
 *   name: "research",
 *   description: "Answer from the docs",
 *   tools: [...mcpToolDefs([files, search], { filter: ["read_text_file", "search"] }), respondTool()],
 *   terminalTool: "respond",
 *   systemPrompt: "Answer from the documents.",
 * });
 */
export async function connectMcpServer(options: McpServerOptions): Promise<McpServerConnection> {
  const settings = parseMcpServerOptions(options);
  const sdk = await loadMcpSdk();
  const client = new sdk.Client({ name: "forge-guardrails", version: "1" }, { capabilities: {} });
  const transport = createTransport(sdk, settings);
  const connection = new SdkMcpConnection(sdk, client, transport, settings);
  try {
    await client.connect(transport, { timeout: settings.connectTimeoutMs });
    await connection.refreshTools();
  } catch (error) {
    await connection.close().catch(() => undefined);
    throw error;
  }
  return connection;
}

function createTransport(sdk: McpSdk, options: McpServerSettings): Transport {
  if (options.url !== undefined) {
    return new sdk.StreamableHTTPClientTransport(new URL(options.url), {
      ...(options.headers !== undefined && { requestInit: { headers: { ...options.headers } } }),
    });
  }
  return new sdk.StdioClientTransport({
    command: options.command,
    args: [...(options.args ?? [])],
    env: { ...sdk.getDefaultEnvironment(), ...options.env },
    stderr: options.stderr,
    ...(options.cwd !== undefined && { cwd: options.cwd }),
  });
}

/** `McpServerConnection` over the SDK's `Client`; internal, made by `connectMcpServer`. */
class SdkMcpConnection implements McpServerConnection {
  readonly name: string;
  readonly timeoutMs: number;
  readonly #client: Client;
  readonly #transport: Transport;
  readonly #onError: ((error: unknown) => void) | undefined;
  readonly #listeners = new Set<(tools: readonly McpToolInfo[]) => void>();
  #tools: readonly McpToolInfo[] = [];
  #refresh: Promise<readonly McpToolInfo[]> = Promise.resolve([]);
  #closing: Promise<void> | undefined;

  constructor(sdk: McpSdk, client: Client, transport: Transport, options: McpServerSettings) {
    this.name = options.name;
    this.timeoutMs = options.timeoutMs;
    this.#client = client;
    this.#transport = transport;
    this.#onError = options.onError;
    client.setNotificationHandler(sdk.ToolListChangedNotificationSchema, async () => {
      await this.refreshTools().catch((error: unknown) => this.#onError?.(error));
    });
  }

  get tools(): readonly McpToolInfo[] {
    return this.#tools;
  }

  get pid(): number | null {
    const pid = (this.#transport as { pid?: number | null }).pid;
    return typeof pid === "number" ? pid : null;
  }

  get closed(): boolean {
    return this.#closing !== undefined;
  }

  refreshTools(): Promise<readonly McpToolInfo[]> {
    this.#refresh = this.#refresh.catch(() => undefined).then(() => this.#listTools());
    return this.#refresh;
  }

  async #listTools(): Promise<readonly McpToolInfo[]> {
    const tools: McpToolInfo[] = [];
    // A server without the tools capability (only prompts or resources) has none to list.
    let cursor: string | undefined;
    if (this.#client.getServerCapabilities()?.tools !== undefined) {
      do {
        const page = await this.#client.listTools(cursor === undefined ? {} : { cursor });
        for (const tool of page.tools) tools.push(tool as McpToolInfo);
        cursor = page.nextCursor;
      } while (cursor !== undefined);
    }
    this.#tools = tools;
    for (const listener of this.#listeners) listener(tools);
    return tools;
  }

  onToolsChanged(listener: (tools: readonly McpToolInfo[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  toolDefs(options?: McpToolDefsOptions): ToolDef[] {
    return mcpToolDefs([this], options);
  }

  async callTool(
    tool: string,
    args: Record<string, unknown>,
    options: McpCallOptions = {},
  ): Promise<unknown> {
    if (!this.#tools.some((listed) => listed.name === tool)) {
      throw new McpToolRemovedError(
        this.name,
        tool,
        this.#tools.map((listed) => listed.name),
      );
    }
    const { signal } = options;
    let result: McpCallResult;
    try {
      result = (await this.#client.callTool(
        {
          name: tool,
          arguments: args,
          ...(options.idempotencyKey !== undefined && {
            _meta: { "forge-guardrails/idempotencyKey": options.idempotencyKey },
          }),
        },
        undefined,
        { timeout: SDK_TIMER_NEVER_MS, ...(signal !== undefined && { signal }) },
      )) as McpCallResult;
    } catch (error) {
      // The SDK reports an abort as its own error; the caller gets the signal's reason (the loop's
      // ToolTimeoutError, the run's cancellation) instead.
      if (signal?.aborted) throw signal.reason ?? error;
      throw error;
    }
    return callResultValue(this.name, tool, result);
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#listeners.clear();
    const terminate = (this.#transport as { terminateSession?: () => Promise<void> }).terminateSession;
    if (typeof terminate === "function") {
      // Streamable HTTP: end the session on the server too; a server without sessions says 405.
      await terminate.call(this.#transport).catch(() => undefined);
    }
    await this.#client.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
