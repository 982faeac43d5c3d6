/**
 * `connectMcpServer`'s options are declared once, as a zod schema: the exported option types are
 * its input types (held at compile time by `tsc`), and the defaults are the schema's.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import type {
  McpHttpServerOptions,
  McpServerBaseOptions,
  McpServerOptions,
  McpStdioServerOptions,
} from "../../src/mcp/index.ts";
import {
  type mcpHttpServerOptionsSchema,
  type mcpServerBaseOptionsSchema,
  type mcpServerOptionsSchema,
  type mcpStdioServerOptionsSchema,
  parseMcpServerOptions,
} from "../../src/mcp/options.ts";

describe("MCP server options", () => {
  it("are the schema's input types", () => {
    expectTypeOf<McpServerOptions>().toEqualTypeOf<z.input<typeof mcpServerOptionsSchema>>();
    expectTypeOf<McpServerBaseOptions>().toEqualTypeOf<z.input<typeof mcpServerBaseOptionsSchema>>();
    expectTypeOf<McpStdioServerOptions>().toEqualTypeOf<z.input<typeof mcpStdioServerOptionsSchema>>();
    expectTypeOf<McpHttpServerOptions>().toEqualTypeOf<z.input<typeof mcpHttpServerOptionsSchema>>();
    // What the hand-written interfaces said, now read off the schema.
    expectTypeOf<McpServerBaseOptions["timeoutMs"]>().toEqualTypeOf<number | undefined>();
    expectTypeOf<McpServerBaseOptions["onError"]>().toEqualTypeOf<((error: unknown) => void) | undefined>();
    expectTypeOf<McpStdioServerOptions["args"]>().toEqualTypeOf<readonly string[] | undefined>();
    expectTypeOf<McpStdioServerOptions["env"]>().toEqualTypeOf<
      Readonly<Record<string, string>> | undefined
    >();
    expectTypeOf<McpStdioServerOptions["stderr"]>().toEqualTypeOf<
      "inherit" | "ignore" | "pipe" | undefined
    >();
    expectTypeOf<McpHttpServerOptions["url"]>().toEqualTypeOf<string | URL>();
    expectTypeOf({ name: "files", command: "npx", args: ["-y"] as const }).toExtend<McpServerOptions>();
    expectTypeOf({ name: "files", url: new URL("http://127.0.0.1/mcp") }).toExtend<McpServerOptions>();
  });

  it("take their defaults from the schema", () => {
    expect(parseMcpServerOptions({ name: "files", command: "npx" })).toEqual({
      name: "files",
      command: "npx",
      timeoutMs: 60_000,
      connectTimeoutMs: 30_000,
      stderr: "inherit",
    });
    expect(parseMcpServerOptions({ name: "web", url: "http://127.0.0.1/mcp", timeoutMs: 5_000 })).toEqual({
      name: "web",
      url: "http://127.0.0.1/mcp",
      timeoutMs: 5_000,
      connectTimeoutMs: 30_000,
    });
  });

  it("refuse a bad option with a RangeError naming it (ADR 031)", () => {
    expect(() => parseMcpServerOptions({ name: "files", command: "npx", onError: "log" })).toThrow(
      RangeError,
    );
    expect(() => parseMcpServerOptions({ name: "files", command: "npx", onError: "log" })).toThrow(/onError/);
    expect(() => parseMcpServerOptions({ name: "files", command: "npx", url: "http://x/" })).toThrow(
      RangeError,
    );
  });
});
