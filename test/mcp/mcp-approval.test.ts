/**
 * `needsApproval` on MCP tools, against the real fixture server over stdio: `"destructive"` takes
 * MCP's annotations (no hint counts as destructive), names and predicates pick tools, and a
 * parked call to the server's destructive tool reaches the server only once approved.
 */
import { resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AwaitingApprovalError, WorkflowDefinitionError } from "../../src/core/errors.ts";
import type { ToolDef } from "../../src/core/tools.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { connectMcpServer, type McpServerConnection } from "../../src/mcp/index.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import { respondTool } from "../../src/tools/respond.ts";

const FIXTURE = resolve(import.meta.dirname, "../fixtures/mcp/server.ts");
const opened: McpServerConnection[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((connection) => connection.close()));
});

async function ordersServer() {
  const connection = await connectMcpServer({
    name: "orders",
    command: process.execPath,
    args: ["--import", "tsx", FIXTURE],
    stderr: "ignore",
  });
  opened.push(connection);
  return connection;
}

const approvalOf = (tools: ToolDef[]) =>
  Object.fromEntries(tools.map((tool) => [tool.spec.name, tool.needsApproval ?? false]));

describe("needsApproval on MCP tools", () => {
  it("maps the option: destructive by annotations, by name, by predicate, all or none", async () => {
    const server = await ordersServer();
    const filter = ["echo", "lookup_order", "delete_order", "add_tool"];
    expect(approvalOf(server.toolDefs({ filter, needsApproval: "destructive" }))).toEqual({
      echo: false,
      lookup_order: false,
      delete_order: true,
      add_tool: true,
    });
    expect(approvalOf(server.toolDefs({ filter, needsApproval: ["add_tool"] }))).toMatchObject({
      add_tool: true,
      delete_order: false,
    });
    expect(
      approvalOf(
        server.toolDefs({ filter, needsApproval: (tool, name) => name === "orders" && tool.name === "echo" }),
      ),
    ).toMatchObject({ echo: true, add_tool: false });
    expect(Object.values(approvalOf(server.toolDefs({ filter, needsApproval: true })))).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(Object.values(approvalOf(server.toolDefs({ filter })))).toEqual([false, false, false, false]);
    expect(() => server.toolDefs({ filter, needsApproval: ["drop_table"] })).toThrow(WorkflowDefinitionError);
  });

  it("parks a call to the destructive tool; the server sees it only once it is approved", async () => {
    const server = await ordersServer();
    const workflow = defineWorkflow({
      name: "mcp-approval",
      description: "Deletes an order after a person approves",
      tools: [
        ...server.toolDefs({ filter: ["echo", "delete_order"], needsApproval: "destructive" }),
        respondTool(),
      ],
      terminalTool: "respond",
      systemPrompt: "Use the tools.",
    });
    const runner = (script: Parameters<typeof toolCall>[] = []) =>
      new WorkflowRunner({
        client: new ScriptedClient(script.map((args) => toolCall(...args))),
        contextManager: { maybeCompact: (messages) => messages },
      });
    const parked = await runner([["delete_order", { orderId: "A17" }]])
      .run(workflow, "Delete A17")
      .catch((error: unknown) => error);
    expect(parked).toBeInstanceOf(AwaitingApprovalError);
    const { snapshot, meta, pending } = parked as AwaitingApprovalError;
    expect(pending.map((call) => call.tool)).toEqual(["delete_order"]);
    const seen = async () =>
      ((await server.callTool("stats", {})) as { calls: Record<string, number> }).calls;
    expect((await seen()).delete_order ?? 0).toBe(0);
    const result = await runner([["respond", { message: "deleted" }]]).resume(
      workflow,
      JSON.parse(JSON.stringify(snapshot)),
      { meta, decisions: [{ callId: pending[0]?.callId as string, approved: true }] },
    );
    expect(result).toBe("deleted");
    expect((await seen()).delete_order).toBe(1);
  });
});
