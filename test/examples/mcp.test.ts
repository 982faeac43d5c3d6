import { describe, expect, it } from "vitest";
import { main } from "../../examples/mcp.ts";

describe("examples/mcp", () => {
  it("runs the order desk's MCP tools in a workflow: structured result, isError as a tool error, effects", async () => {
    const lines: string[] = [];
    const { answer, results, effects } = await main((line) => lines.push(line));
    expect(answer).toBe("A17 has shipped and cannot be cancelled; B2 is cancelled.");
    expect(results).toEqual([
      JSON.stringify({ orderId: "A17", status: "shipped", total: 42.5 }),
      "[ToolError] McpToolError: Order A17 has shipped; it cannot be cancelled",
      "Order B2 cancelled",
      "A17 has shipped and cannot be cancelled; B2 is cancelled.",
    ]);
    expect(effects).toEqual({ desk_lookup_order: "none", desk_cancel_order: "unsafe" });
    expect(lines[0]).toBe("tools: desk_lookup_order (none), desk_cancel_order (unsafe)");
  });
});
