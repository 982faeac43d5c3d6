/**
 * The pure parts of `forge-guardrails/mcp`: effects from annotations, tool names and collisions,
 * result values, and the typed error when the SDK is missing.
 */
import { describe, expect, it } from "vitest";
import { WorkflowDefinitionError } from "../../src/core/errors.ts";
import type { McpServerConnection, McpToolInfo } from "../../src/mcp/connection.ts";
import {
  effectsFromAnnotations,
  MCP_SDK_INSTALL,
  McpSdkMissingError,
  McpToolError,
  McpToolNameCollisionError,
  mcpToolDefs,
} from "../../src/mcp/index.ts";
import { assertNoCollision, exposedToolName } from "../../src/mcp/naming.ts";
import { assertMcpServerOptions } from "../../src/mcp/options.ts";
import { callResultValue, contentText } from "../../src/mcp/result.ts";
import { loadMcpSdk, type McpSdk } from "../../src/mcp/sdk.ts";

describe("effectsFromAnnotations", () => {
  it.each([
    [{ readOnlyHint: true }, "none"],
    [{ readOnlyHint: true, destructiveHint: true }, "none"],
    [{ idempotentHint: true }, "idempotent"],
    [{ idempotentHint: true, destructiveHint: true }, "idempotent"],
    [{ destructiveHint: true }, "unsafe"],
    [{ destructiveHint: false }, "unsafe"],
    [{ openWorldHint: true }, "unsafe"],
    [{}, "unsafe"],
    [undefined, "unsafe"],
  ])("%j → %s", (annotations, effects) => {
    expect(effectsFromAnnotations(annotations)).toBe(effects);
  });
});

describe("tool names", () => {
  it("prefixes with the server's name and replaces what a tool name may not hold", () => {
    expect(exposedToolName("files", "read_file", true)).toBe("files_read_file");
    expect(exposedToolName("files", "read_file", false)).toBe("read_file");
    expect(exposedToolName("gh", "issues.search/all", true)).toBe("gh_issues_search_all");
  });

  it("refuses a collision that prefixing creates, naming both servers and tools", () => {
    const tools = [
      { server: "a", tool: "b_c", name: exposedToolName("a", "b_c", true) },
      { server: "a_b", tool: "c", name: exposedToolName("a_b", "c", true) },
    ];
    expect(() => assertNoCollision(tools)).toThrow(McpToolNameCollisionError);
    expect(() => assertNoCollision(tools)).toThrow(
      "'a_b_c' is offered by server 'a' (tool 'b_c') and by server 'a_b' (tool 'c')",
    );
    expect(() => assertNoCollision(tools.slice(0, 1))).not.toThrow();
  });
});

/** A stand-in connection with a fixed tool list (mcpToolDefs reads only `name`, `tools`, `callTool`). */
function fakeServer(name: string, tools: McpToolInfo[]): McpServerConnection {
  return { name, tools, callTool: async () => "ok" } as unknown as McpServerConnection;
}

describe("mcpToolDefs", () => {
  const files = fakeServer("files", [
    { name: "read_file", inputSchema: { type: "object", properties: { path: { type: "string" } } } },
    {
      name: "write_file",
      description: "Write",
      inputSchema: { type: "object" },
      annotations: { readOnlyHint: false },
    },
  ]);

  it("filters by name or predicate; a name no server offers is a definition error listing what is", () => {
    expect(mcpToolDefs(files, { filter: ["read_file"] }).map((tool) => tool.spec.name)).toEqual([
      "read_file",
    ]);
    expect(
      mcpToolDefs(files, { filter: (tool) => tool.annotations?.readOnlyHint !== false }).map(
        (tool) => tool.spec.name,
      ),
    ).toEqual(["read_file"]);
    expect(() => mcpToolDefs(files, { filter: ["files_read_file"] })).toThrow(WorkflowDefinitionError);
    expect(() => mcpToolDefs(files, { filter: ["files_read_file"] })).toThrow(
      "Offered: read_file, write_file",
    );
  });

  it("lets the effects option override the annotations, by the name the model sees", () => {
    const tools = mcpToolDefs(files, { effects: { write_file: "idempotent" } });
    expect(tools.map((tool) => tool.effects)).toEqual(["unsafe", "idempotent"]);
    expect(() => mcpToolDefs(files, { effects: { files_write_file: "none" } })).toThrow(
      "MCP effects given for 'files_write_file', not among the chosen tools: read_file, write_file",
    );
  });

  it("refuses two connections of one name", () => {
    const again = fakeServer("files", []);
    expect(() => mcpToolDefs([files, again], { prefix: true })).toThrow(
      "Two MCP connections are both named 'files'",
    );
  });
});

describe("callResultValue", () => {
  it("returns structured content as an object, else the content's text", () => {
    expect(
      callResultValue("s", "t", { content: [{ type: "text", text: "{}" }], structuredContent: { total: 3 } }),
    ).toEqual({ total: 3 });
    expect(
      callResultValue("s", "t", {
        content: [
          { type: "text", text: "a" },
          { type: "text", text: "b" },
        ],
      }),
    ).toBe("a\nb");
  });

  it("throws McpToolError with the text of an isError result", () => {
    expect(() =>
      callResultValue("s", "t", { content: [{ type: "text", text: "nope" }], isError: true }),
    ).toThrow(new McpToolError("s", "t", "nope"));
    expect(() =>
      callResultValue("s", "t", { content: [], isError: true, structuredContent: { code: 7 } }),
    ).toThrow('{"code":7}');
  });

  it("describes what a text model cannot read", () => {
    expect(
      contentText([
        { type: "image", mimeType: "image/png", data: "AAAA" },
        { type: "resource_link", uri: "file:///a.txt", name: "a.txt" },
        { type: "resource", resource: { uri: "file:///b.txt", text: "B" } },
        { type: "resource", resource: { uri: "file:///c.bin", blob: "AA", mimeType: "application/zip" } },
      ]),
    ).toBe(
      "[image: image/png, 4 base64 characters, not shown]\n[resource: file:///a.txt (a.txt)]\nB\n[resource: file:///c.bin, application/zip, not shown]",
    );
  });
});

describe("loadMcpSdk", () => {
  it("names the install command when the SDK is not installed", async () => {
    // A real module-not-found from Node's resolver, for a package under the SDK's name.
    const missing = () =>
      import(
        /* @vite-ignore */ ["@modelcontextprotocol", "sdk-not-installed/client/index.js"].join("/")
      ) as Promise<McpSdk>;
    const error = await loadMcpSdk(missing).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(McpSdkMissingError);
    expect((error as Error).message).toContain(MCP_SDK_INSTALL);
    expect(MCP_SDK_INSTALL).toBe("npm install @modelcontextprotocol/sdk@1");
    expect((error as Error).name).toBe("McpSdkMissingError");
  });

  it("passes any other failure through", async () => {
    const broken = new TypeError("boom");
    await expect(loadMcpSdk(() => Promise.reject(broken))).rejects.toBe(broken);
  });

  it("loads the installed SDK", async () => {
    const sdk = await loadMcpSdk();
    expect(typeof sdk.Client).toBe("function");
  });
});

describe("mcpToolDefs, a tool the loop cannot take", () => {
  it("names the server and tool, and a filter leaves it out", () => {
    const odd = fakeServer("odd", [
      { name: "fine", inputSchema: { type: "object" } },
      { name: "scalar", inputSchema: { type: "string" } },
    ]);
    expect(() => mcpToolDefs(odd)).toThrow(
      "MCP server 'odd', tool 'scalar': Tool 'scalar': parameters schema",
    );
    expect(mcpToolDefs(odd, { filter: ["fine"] }).map((tool) => tool.spec.name)).toEqual(["fine"]);
  });
});

describe("assertMcpServerOptions", () => {
  it.each([
    {
      name: "files",
      command: "npx",
      args: ["-y", "server"],
      env: { A: "1" },
      timeoutMs: 5_000,
      onError: () => {},
    },
    { name: "remote", url: "http://127.0.0.1:3000/mcp", headers: { authorization: "Bearer x" } },
    { name: "remote", url: new URL("https://example.com/mcp") },
  ])("takes %j", (options) => {
    expect(() => assertMcpServerOptions(options)).not.toThrow();
  });

  it.each([
    [{ name: "my server", command: "npx" }, "name: use 1-48 letters"],
    [{ name: "files" }, 'MCP server "files": give { name, command'],
    [{ name: "files", command: "npx", url: "http://127.0.0.1/mcp" }, 'MCP server "files"'],
    [{ name: "remote", url: "ftp://example.com" }, "url"],
    [{ name: "files", command: "npx", timeoutMs: 0 }, "timeoutMs"],
  ])("refuses %j", (options, message) => {
    expect(() => assertMcpServerOptions(options)).toThrow(RangeError);
    expect(() => assertMcpServerOptions(options)).toThrow(message);
  });
});
