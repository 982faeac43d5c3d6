/**
 * An MCP server's tools in a guarded workflow: examples/mcp-server.ts runs as a child process over
 * stdio; its tools become `ToolDef`s (prefixed with the server's name, filtered to the two the
 * workflow needs); a scripted model looks an order up, tries to cancel a shipped one (the server's
 * `isError` answer comes back as a tool error), cancels another, and answers.
 *
 * The model is scripted unless the environment names a real one (examples/backend.ts). Needs
 * `@modelcontextprotocol/sdk`.
 *
 * Run it: `npx tsx examples/mcp.ts`
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import {
  ContextManager,
  defineWorkflow,
  type Message,
  NoCompact,
  respondTool,
  WorkflowRunner,
} from "forge-guardrails";
import { connectMcpServer } from "forge-guardrails/mcp";
import { toolCall } from "forge-guardrails/testing";
import { exampleBackend } from "./backend.ts";

/** Connect, run the workflow, close; returns the answer, the tool results and the tools' effects. */
export async function main(log: (line: string) => void = console.log, env: NodeJS.ProcessEnv = process.env) {
  await using desk = await connectMcpServer({
    name: "desk",
    command: process.execPath,
    args: ["--import", "tsx", join(import.meta.dirname, "mcp-server.ts")],
    timeoutMs: 10_000,
  });
  const tools = desk.toolDefs({ prefix: true, filter: ["desk_lookup_order", "desk_cancel_order"] });
  const effects = Object.fromEntries(tools.map((tool) => [tool.spec.name, tool.effects]));
  log(`tools: ${tools.map((tool) => `${tool.spec.name} (${tool.effects})`).join(", ")}`);

  const workflow = defineWorkflow({
    name: "order-desk",
    description: "Cancel the orders that can still be cancelled",
    tools: [...tools, respondTool()],
    requiredSteps: ["desk_lookup_order"],
    terminalTool: "respond",
    systemPrompt: "You help customers with their orders. Look an order up before acting on it.",
  });
  const { client, budgetTokens } = await exampleBackend(
    [
      toolCall("desk_lookup_order", { orderId: "A17" }),
      toolCall("desk_cancel_order", { orderId: "A17" }),
      toolCall("desk_cancel_order", { orderId: "B2" }),
      toolCall("respond", { message: "A17 has shipped and cannot be cancelled; B2 is cancelled." }),
    ],
    env,
  );
  const results: string[] = [];
  const runner = new WorkflowRunner({
    client,
    contextManager: new ContextManager({ strategy: new NoCompact(), budgetTokens }),
    onMessage: (message: Message) => {
      if (message.metadata.type !== "tool_result") return;
      results.push(message.content);
      log(`${message.toolName}: ${message.content}`);
    },
  });
  const answer = await runner.run(workflow, "Please cancel my orders A17 and B2.");
  log(`answer: ${String(answer)}`);
  return { answer, results, effects };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
