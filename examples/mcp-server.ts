/**
 * The MCP server examples/mcp.ts connects to: a small order desk written with the SDK's
 * `McpServer`, over stdio. `lookup_order` is read-only, `cancel_order` destructive.
 *
 * Run on its own: `npx tsx examples/mcp-server.ts` (it then waits for a client on stdin).
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const orders = new Map([
  ["A17", { status: "shipped", total: 42.5 }],
  ["B2", { status: "paid", total: 10 }],
]);

const server = new McpServer({ name: "order-desk", version: "1.0.0" });

server.registerTool(
  "lookup_order",
  {
    description: "Look an order up by id",
    inputSchema: { orderId: z.string().describe("Order id, like A17") },
    outputSchema: { orderId: z.string(), status: z.string(), total: z.number() },
    annotations: { readOnlyHint: true },
  },
  async ({ orderId }) => {
    const order = orders.get(orderId);
    if (!order) return { content: [{ type: "text", text: `No order ${orderId}` }], isError: true };
    const structuredContent = { orderId, ...order };
    return { content: [{ type: "text", text: JSON.stringify(structuredContent) }], structuredContent };
  },
);

server.registerTool(
  "cancel_order",
  {
    description: "Cancel an order that has not shipped",
    inputSchema: { orderId: z.string() },
    annotations: { destructiveHint: true },
  },
  async ({ orderId }) => {
    const order = orders.get(orderId);
    if (!order) return { content: [{ type: "text", text: `No order ${orderId}` }], isError: true };
    if (order.status === "shipped") {
      return {
        content: [{ type: "text", text: `Order ${orderId} has shipped; it cannot be cancelled` }],
        isError: true,
      };
    }
    order.status = "cancelled";
    return { content: [{ type: "text", text: `Order ${orderId} cancelled` }] };
  },
);

await server.connect(new StdioServerTransport());
