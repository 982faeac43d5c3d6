/**
 * `mcpToolDefs` makes each tool with `defineTool`, so an MCP tool is a tool like any other: the
 * server's JSON Schema as-is, its connection's `timeoutMs` as the tool's, and `defineTool`'s call
 * context when run outside a loop.
 */
import { describe, expect, it, vi } from "vitest";
import * as tools from "../../src/core/tools.ts";
import type { McpCallOptions, McpServerConnection, McpToolInfo } from "../../src/mcp/index.ts";
import { mcpToolDefs } from "../../src/mcp/index.ts";

vi.mock("../../src/core/tools.ts", async (importOriginal) => {
  const original = await importOriginal<typeof import("../../src/core/tools.ts")>();
  return { ...original, defineTool: vi.fn(original.defineTool) };
});

const schema = { type: "object", properties: { path: { type: "string" } }, required: ["path"] };

/** A stand-in connection: a fixed tool list, and the calls it received. */
function fakeServer(name: string, list: McpToolInfo[], timeoutMs: number) {
  const calls: { tool: string; args: Record<string, unknown>; options: McpCallOptions | undefined }[] = [];
  const connection = {
    name,
    timeoutMs,
    tools: list,
    callTool: async (tool: string, args: Record<string, unknown>, options?: McpCallOptions) => {
      calls.push({ tool, args, options });
      return "ok";
    },
  } as unknown as McpServerConnection;
  return { connection, calls };
}

describe("mcpToolDefs", () => {
  it("makes each tool with defineTool: schema as-is, the connection's timeoutMs, effects and approval", () => {
    const { connection } = fakeServer(
      "files",
      [
        { name: "read_file", description: "Read", inputSchema: schema, annotations: { readOnlyHint: true } },
        { name: "write_file", description: "Write", inputSchema: { type: "object" } },
      ],
      5_000,
    );
    const defineTool = vi.mocked(tools.defineTool);
    defineTool.mockClear();
    const made = mcpToolDefs(connection, { needsApproval: "destructive" });
    expect(defineTool).toHaveBeenCalledTimes(2);
    expect(defineTool.mock.results.map((result) => result.value)).toEqual(made);
    const [read, write] = made;
    expect(read?.spec).toMatchObject({ name: "read_file", description: "Read", jsonSchema: schema });
    expect(tools.toolJsonSchema(read?.spec as tools.ToolSpec)).toEqual(schema);
    expect(read).toMatchObject({ timeoutMs: 5_000, effects: "none", prerequisites: [] });
    expect(read?.needsApproval).toBeUndefined();
    expect(write).toMatchObject({ timeoutMs: 5_000, effects: "unsafe", needsApproval: true });
  });

  it("calls the server with the call's signal and idempotency key, a context of its own outside a run", async () => {
    const { connection, calls } = fakeServer("files", [{ name: "read_file", inputSchema: schema }], 5_000);
    const [read] = mcpToolDefs(connection);
    await expect(read?.execute({ path: "a.txt" })).resolves.toBe("ok");
    expect(calls).toHaveLength(1);
    expect(calls[0]?.tool).toBe("read_file");
    expect(calls[0]?.args).toEqual({ path: "a.txt" });
    expect(calls[0]?.options?.signal).toBeInstanceOf(AbortSignal);
    expect(calls[0]?.options?.idempotencyKey).toMatch(/^standalone:/);
    expect(Object.keys(calls[0]?.options ?? {}).sort()).toEqual(["idempotencyKey", "signal"]);
  });
});
