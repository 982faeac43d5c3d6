/**
 * `forge-guardrails/mcp` against a real MCP server (test/fixtures/mcp/server.ts, written with the
 * SDK's server API) run as a child process over stdio, and once over Streamable HTTP on 127.0.0.1:
 * its tools in a `WorkflowRunner` run driven by a `ScriptedClient`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { Message } from "../../src/core/messages.ts";
import type { ToolDef } from "../../src/core/tools.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import {
  ForgeError,
  MessageType,
  ToolExecutionError,
  ToolTimeoutError,
  WorkflowCancelledError,
} from "../../src/index.ts";
import type { CheckpointMeta } from "../../src/loop/checkpoint.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import {
  connectMcpServer,
  type McpServerConnection,
  type McpStdioServerOptions,
  McpToolNameCollisionError,
  mcpToolDefs,
} from "../../src/mcp/index.ts";
import { ScriptedClient, type ScriptStep, toolCall } from "../../src/testing/index.ts";
import { respondTool } from "../../src/tools/respond.ts";
import { LOOKUP_ORDER_SCHEMA } from "../fixtures/mcp/server.ts";
import { createPassthrough } from "../helpers/workflows.ts";

const FIXTURE = resolve(import.meta.dirname, "../fixtures/mcp/server.ts");
const opened: McpServerConnection[] = [];

/** The fixture server as a child process over stdio (node with tsx's loader: one process, one pid). */
async function stdioServer(name: string, options: Partial<McpStdioServerOptions> = {}) {
  const connection = await connectMcpServer({
    name,
    command: process.execPath,
    args: ["--import", "tsx", FIXTURE],
    stderr: "ignore",
    ...options,
  });
  opened.push(connection);
  return connection;
}

afterEach(async () => {
  await Promise.all(opened.splice(0).map((connection) => connection.close()));
});

/** A run of `tools` (+ respond, terminal) scripted by `script`; its history and result. */
async function run(tools: ToolDef[], script: ScriptStep[], signal?: AbortSignal) {
  const client = new ScriptedClient(script);
  const messages: Message[] = [];
  const runner = new WorkflowRunner({
    client,
    contextManager: createPassthrough(),
    onMessage: (message) => messages.push(message),
    cancelGraceMs: 100,
  });
  const workflow = defineWorkflow({
    name: "mcp",
    description: "Uses an MCP server's tools",
    tools: [...tools, respondTool()],
    terminalTool: "respond",
    systemPrompt: "Use the tools.",
  });
  const outcome = runner.run(workflow, "Go", signal ? { signal } : {});
  return { client, messages, outcome };
}

const results = (messages: Message[]) =>
  messages
    .filter((message) => message.metadata.type === MessageType.TOOL_RESULT)
    .map((message) => message.content);

describe("MCP tools over stdio", () => {
  it("lists the server's tools as ToolDefs: exact JSON Schema, effects from annotations", async () => {
    const server = await stdioServer("orders");
    const tools = Object.fromEntries(server.toolDefs().map((tool) => [tool.spec.name, tool]));
    expect(Object.keys(tools)).toEqual([
      "echo",
      "lookup_order",
      "delete_order",
      "fail",
      "explode",
      "hang",
      "stats",
      "add_tool",
    ]);
    expect(tools.lookup_order?.spec.jsonSchema).toEqual(LOOKUP_ORDER_SCHEMA);
    expect(tools.lookup_order?.spec.description).toBe("Look an order up by id");
    // readOnlyHint → "none"; idempotentHint → "idempotent"; destructiveHint or no hint → "unsafe".
    expect(tools.echo?.effects).toBe("none");
    expect(tools.lookup_order?.effects).toBe("idempotent");
    expect(tools.delete_order?.effects).toBe("unsafe");
    expect(tools.add_tool?.effects).toBe("unsafe");
    // The schema's constraints are enforced before the call reaches the server.
    expect(tools.lookup_order?.spec.parameters.safeParse({ orderId: "17" }).success).toBe(false);
    expect(tools.lookup_order?.spec.parameters.safeParse({ orderId: "A17" }).success).toBe(true);
  });

  it("calls tools in a run: text and structured results reach the history, isError and server errors come back as tool errors", async () => {
    const server = await stdioServer("orders");
    const { client, messages, outcome } = await run(
      server.toolDefs({ filter: ["echo", "lookup_order", "fail", "explode"] }),
      [
        toolCall("echo", { text: "hi" }),
        toolCall("lookup_order", { orderId: "A17" }),
        toolCall("fail"),
        toolCall("explode"),
        toolCall("respond", { message: "done" }),
      ],
    );
    await expect(outcome).resolves.toBe("done");
    expect(results(messages)).toEqual([
      "echo: hi",
      JSON.stringify({ orderId: "A17", status: "shipped", total: 42.5 }),
      "[ToolError] McpToolError: order 42 not found",
      "[ToolError] McpError: MCP error -32603: disk on fire",
      "done",
    ]);
    // The filter: the model saw only the three tools (and respond), with the server's schema as-is.
    const seen = client.calls[0]?.tools ?? [];
    expect(seen.map((tool) => tool.name)).toEqual(["echo", "lookup_order", "fail", "explode", "respond"]);
    expect(seen[1]?.parameters).toEqual(LOOKUP_ORDER_SCHEMA);
    // Each call carried its idempotency key (`<runId>:<callId>`), one key per call.
    const { keys } = (await server.callTool("stats", {})) as { keys: string[] };
    expect(keys).toHaveLength(4);
    expect(new Set(keys).size).toBe(4);
    for (const key of keys) expect(key).toMatch(/^[^:]+:[^:]+$/);
  });

  it("refuses two servers offering one name, naming both; prefix: true tells them apart", async () => {
    const [first, second] = await Promise.all([stdioServer("shop"), stdioServer("warehouse")]);
    let error: unknown;
    try {
      mcpToolDefs([first, second]);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(McpToolNameCollisionError);
    expect((error as Error).message).toContain("'echo'");
    expect((error as Error).message).toContain("server 'shop'");
    expect((error as Error).message).toContain("server 'warehouse'");
    const names = mcpToolDefs([first, second], { prefix: true, filter: ["shop_echo", "warehouse_echo"] }).map(
      (tool) => tool.spec.name,
    );
    expect(names).toEqual(["shop_echo", "warehouse_echo"]);
  });

  it("follows tools/list_changed; a running workflow keeps the tools it was defined with", async () => {
    const server = await stdioServer("orders");
    const changed = new Promise<readonly string[]>((resolveChanged) => {
      server.onToolsChanged((tools) => resolveChanged(tools.map((tool) => tool.name)));
    });
    const { client, outcome } = await run(server.toolDefs({ filter: ["add_tool"] }), [
      toolCall("add_tool", { name: "weather" }),
      async () => {
        await changed;
        return toolCall("respond", { message: "added" });
      },
    ]);
    await expect(outcome).resolves.toBe("added");
    expect(await changed).toContain("weather");
    expect(client.calls[1]?.tools.map((tool) => tool.name)).toEqual(["add_tool", "respond"]);
    expect(server.toolDefs({ filter: ["weather"] }).map((tool) => tool.spec.name)).toEqual(["weather"]);
  });

  it("times a hung tool out as a tool error, and the run goes on", async () => {
    const server = await stdioServer("orders", { timeoutMs: 300 });
    const { messages, outcome } = await run(server.toolDefs({ filter: ["hang"] }), [
      toolCall("hang"),
      toolCall("respond", { message: "gave up" }),
    ]);
    await expect(outcome).resolves.toBe("gave up");
    // The loop's tool timer (the tool's timeoutMs, the server's option): ToolTimeoutError, ADR 037.
    expect(results(messages)[0]).toMatch(
      /^\[ToolError\] ToolTimeoutError: 'hang' did not return within 300 ms/,
    );
    expect(await server.callTool("stats", {})).toMatchObject({ cancelled: 1 });
  });

  it("runs one timer per call: the tool's timeoutMs, not the server option it came from; the request is aborted when it fires", async () => {
    const server = await stdioServer("orders", { timeoutMs: 300 });
    const [hang] = server.toolDefs({ filter: ["hang"] });
    expect(hang?.timeoutMs).toBe(300);
    // The same tool given 1 200 ms: nothing else cuts the call at the server's 300 ms. With
    // maxToolErrors 0 the run fails on the first tool error, carrying it as the cause.
    const runner = new WorkflowRunner({
      client: new ScriptedClient([toolCall("hang")]),
      contextManager: createPassthrough(),
      maxToolErrors: 0,
    });
    const workflow = defineWorkflow({
      name: "mcp",
      description: "One slow MCP tool",
      tools: [{ ...(hang as ToolDef), timeoutMs: 1_200 }, respondTool()],
      terminalTool: "respond",
      systemPrompt: "Use the tools.",
    });
    const started = performance.now();
    const failure = await runner.run(workflow, "Go").catch((caught: unknown) => caught);
    expect(performance.now() - started).toBeGreaterThanOrEqual(1_150);
    expect(failure).toBeInstanceOf(ToolExecutionError);
    const cause = (failure as ToolExecutionError).cause;
    expect(cause).toBeInstanceOf(ToolTimeoutError);
    expect(cause).toBeInstanceOf(ForgeError);
    expect(cause).toMatchObject({ toolName: "hang", timeoutMs: 1_200 });
    // The tool's signal aborted the SDK request: the server was sent notifications/cancelled.
    await expect.poll(() => server.callTool("stats", {}), { timeout: 5_000 }).toMatchObject({ cancelled: 1 });
  });

  it("bounds a direct callTool by its signal only", async () => {
    const server = await stdioServer("orders", { timeoutMs: 300 });
    const started = performance.now();
    const error = await server
      .callTool("hang", {}, { signal: AbortSignal.timeout(700) })
      .catch((caught: unknown) => caught);
    // The signal's reason, at the signal's time: no timer of the connection's cut it at 300 ms.
    expect(error).toMatchObject({ name: "TimeoutError" });
    expect(performance.now() - started).toBeGreaterThanOrEqual(650);
    await expect.poll(() => server.callTool("stats", {}), { timeout: 5_000 }).toMatchObject({ cancelled: 1 });
  });

  it("cancels a hung call with the run's signal: the server is told, the run ends cancelled", async () => {
    const server = await stdioServer("orders");
    const controller = new AbortController();
    const { outcome } = await run(
      server.toolDefs({ filter: ["hang"] }),
      [
        () => {
          setTimeout(() => controller.abort(), 200);
          return toolCall("hang");
        },
      ],
      controller.signal,
    );
    await expect(outcome).rejects.toBeInstanceOf(WorkflowCancelledError);
    await expect.poll(() => server.callTool("stats", {}), { timeout: 5_000 }).toMatchObject({ cancelled: 1 });
  });

  it("lists no tools for a server without the tools capability", async () => {
    const server = await stdioServer("empty", { args: ["--import", "tsx", FIXTURE, "--no-tools"] });
    expect(server.tools).toEqual([]);
    expect(server.toolDefs()).toEqual([]);
  });

  it("ends the child process on close (and with await using)", async () => {
    const server = await stdioServer("orders");
    const pid = server.pid;
    expect(pid).toBeTypeOf("number");
    expect(alive(pid as number)).toBe(true);
    await server.close();
    expect(server.pid).toBeNull();
    await expect.poll(() => alive(pid as number), { timeout: 5_000 }).toBe(false);

    let disposedPid: number | null = null;
    {
      await using scoped = await connectMcpServer({
        name: "scoped",
        command: process.execPath,
        args: ["--import", "tsx", FIXTURE],
        stderr: "ignore",
      });
      disposedPid = scoped.pid;
      expect(alive(disposedPid as number)).toBe(true);
    }
    await expect.poll(() => alive(disposedPid as number), { timeout: 5_000 }).toBe(false);
  });
});

describe("MCP annotations on a resumed run", () => {
  /**
   * One call of `tool`, interrupted as it starts (the process "dies" at its `call_started`
   * checkpoint), then resumed in a new runner; what the server received, and the resumed history.
   */
  async function interruptAndResume(tool: "lookup_order" | "delete_order") {
    const server = await stdioServer("orders");
    const workflow = defineWorkflow({
      name: "orders",
      description: "One order call, then respond",
      tools: [...server.toolDefs({ filter: [tool] }), respondTool()],
      terminalTool: "respond",
      systemPrompt: "Use the tools.",
    });
    const saved: { snapshot: unknown; meta: CheckpointMeta }[] = [];
    const controller = new AbortController();
    await new Promise<void>((resolveDied) => {
      new WorkflowRunner({
        client: new ScriptedClient([toolCall(tool, { orderId: "A17" })]),
        contextManager: createPassthrough(),
      })
        .run(workflow, "Go", {
          runId: "run-1",
          signal: controller.signal,
          checkpoint: (snapshot, meta) => {
            saved.push({ snapshot: JSON.parse(JSON.stringify(snapshot)), meta });
            if (meta.reason !== "call_started") return;
            resolveDied();
            return new Promise(() => {}); // never returns: the process is gone
          },
        })
        .catch(() => {});
    });
    controller.abort();
    const last = saved.at(-1) as (typeof saved)[number];
    const messages: Message[] = [];
    const resumed = new WorkflowRunner({
      client: new ScriptedClient([toolCall("respond", { message: "done" })]),
      contextManager: createPassthrough(),
      onMessage: (message) => messages.push(message),
    });
    await expect(resumed.resume(workflow, last.snapshot as never, { meta: last.meta })).resolves.toBe("done");
    const stats = (await server.callTool("stats", {})) as { calls: Record<string, number> };
    return { calls: stats.calls[tool] ?? 0, results: results(messages) };
  }

  it("re-runs an interrupted call of an idempotentHint tool", async () => {
    const { calls, results: seen } = await interruptAndResume("lookup_order");
    expect(calls).toBe(1);
    expect(seen[0]).toBe(JSON.stringify({ orderId: "A17", status: "shipped", total: 42.5 }));
  });

  it("never re-runs an interrupted call of a destructiveHint tool: the model hears OutcomeUnknown", async () => {
    const { calls, results: seen } = await interruptAndResume("delete_order");
    expect(calls).toBe(0);
    expect(seen[0]).toMatch(/^\[ToolError\] OutcomeUnknown: 'delete_order' was interrupted/);
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("MCP tools over Streamable HTTP", () => {
  let child: ChildProcess | undefined;
  afterAll(() => {
    child?.kill();
  });

  it("connects with headers and runs a tool in a workflow", async () => {
    child = spawn(process.execPath, ["--import", "tsx", FIXTURE, "--http"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const lines = createInterface({ input: child.stdout as NonNullable<ChildProcess["stdout"]> });
    const [line] = (await once(lines, "line")) as [string];
    const port = Number(/^listening (\d+)$/.exec(line)?.[1]);
    expect(port).toBeGreaterThan(0);

    await expect(
      connectMcpServer({ name: "remote", url: `http://127.0.0.1:${port}/mcp`, connectTimeoutMs: 5_000 }),
    ).rejects.toThrow();

    const server = await connectMcpServer({
      name: "remote",
      url: `http://127.0.0.1:${port}/mcp`,
      headers: { authorization: "Bearer fixture-token" },
    });
    opened.push(server);
    const { messages, outcome } = await run(
      server.toolDefs({ prefix: true, filter: ["remote_lookup_order"] }),
      [
        toolCall("remote_lookup_order", { orderId: "B2", fields: ["status"] }),
        toolCall("respond", { message: "B2 shipped" }),
      ],
    );
    await expect(outcome).resolves.toBe("B2 shipped");
    expect(results(messages)[0]).toBe(JSON.stringify({ orderId: "B2", status: "shipped", total: 42.5 }));
  });
});
