/**
 * Issue 36's measurement: two-step workflows (a lookup, required → a report, terminal) in domains
 * the eval does not have, run by WorkflowRunner through LlamaCppClient (functions mode, greedy) on
 * a real GGUF with 1 thread. Prints each run's outcome, calls, output tokens and time.
 *
 *   nice -n 19 npx tsx scripts/repro-two-step.ts [--subsets steps|all] [--runs n] [--case k] [--max-tokens n] [--verbose]
 */
import { parseArgs } from "node:util";
import { z } from "zod";
import { LlamaCppClient } from "../src/clients/llama-cpp/client.ts";
import type { ToolSpec } from "../src/core/tools.ts";
import type { SendOptions } from "../src/core/types.ts";
import {
  ContextManager,
  defineTool,
  defineWorkflow,
  ForgeError,
  type Message,
  TieredCompact,
  type Workflow,
  WorkflowRunner,
} from "../src/index.ts";

const { values } = parseArgs({
  options: {
    model: { type: "string", default: ".cache/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf" },
    subsets: { type: "string", default: "steps" },
    runs: { type: "string", default: "8" },
    /** Start at this case (1-based) instead of the first. */
    case: { type: "string", default: "1" },
    "max-tokens": { type: "string" },
    "max-iterations": { type: "string", default: "8" },
    verbose: { type: "boolean", default: false },
  },
});

interface Case {
  workflow: Workflow;
  question: string;
}

/** Two-step workflows in domains the eval does not have: a lookup (required), then a report (terminal). */
function cases(): Case[] {
  const order = defineWorkflow({
    name: "order-status",
    description: "Look up an order's status and report it",
    tools: [
      defineTool({
        name: "lookup_order_status",
        description: "Look up the shipping status of an order by its id",
        parameters: z.object({ order_id: z.string() }),
        execute: ({ order_id }) => `Order ${order_id}: ${order_id.length % 2 === 0 ? "shipped" : "on hold"}`,
      }),
      defineTool({
        name: "report_status",
        description: "Report the order's status to the customer. Call it last.",
        parameters: z.object({ order_id: z.string(), status: z.string() }),
        execute: ({ order_id, status }) => ({ order_id, status }),
      }),
    ],
    requiredSteps: ["lookup_order_status"],
    terminalTool: "report_status",
    systemPrompt: "You are a support assistant. Look up the order, then report its status.",
  });
  const book = defineWorkflow({
    name: "book-availability",
    description: "Check whether a library book is available and tell the member",
    tools: [
      defineTool({
        name: "check_book_availability",
        description: "How many copies of a book the library has on the shelf",
        parameters: z.object({ title: z.string() }),
        execute: ({ title }) => ({ title, copies: title.length % 3 }),
      }),
      defineTool({
        name: "notify_member",
        description: "Tell the member whether the book is available",
        parameters: z.object({ title: z.string(), available: z.boolean() }),
        execute: ({ title, available }) => ({ title, available }),
      }),
    ],
    requiredSteps: ["check_book_availability"],
    terminalTool: "notify_member",
    systemPrompt: "You help library members.",
  });
  const stock = defineWorkflow({
    name: "pharmacy-stock",
    description: "Count a medicine's stock and send the count",
    tools: [
      defineTool({
        name: "count_stock",
        description: "Count the boxes of a medicine in the pharmacy's store room",
        parameters: z.object({ medicine: z.string() }),
        execute: ({ medicine }) => `${medicine.length * 7} boxes of ${medicine}`,
      }),
      defineTool({
        name: "send_stock_report",
        description: "Send the stock count of a medicine to the head pharmacist",
        parameters: z.object({ medicine: z.string(), boxes: z.number().int() }),
        execute: ({ medicine, boxes }) => ({ medicine, boxes }),
      }),
    ],
    requiredSteps: ["count_stock"],
    terminalTool: "send_stock_report",
    systemPrompt: "You are a pharmacy assistant.",
  });
  return [
    { workflow: order, question: "Report the status of order A-1042 to the customer." },
    { workflow: book, question: "Tell the member if 'The Glass Orchard' is available." },
    { workflow: stock, question: "Send the head pharmacist the stock count for ibuprofen." },
    { workflow: order, question: "What's the status of order Z-77?" },
    { workflow: book, question: "Is 'Salt and Cedar' on the shelf? Let the member know." },
    { workflow: stock, question: "How many boxes of amoxicillin do we have? Report it." },
    { workflow: order, question: "Customer asks about order Q-9001, please report its status." },
    { workflow: book, question: "Notify the member about the availability of 'Night Ferry'." },
  ];
}

const maxTokens = values["max-tokens"] === undefined ? undefined : Number(values["max-tokens"]);
const client = new LlamaCppClient({
  modelPath: values.model,
  threads: 1,
  temperature: 0,
  ...(maxTokens !== undefined && { maxTokens }),
  logger: () => undefined,
});
const info = await client.load();
console.log(`chat wrapper ${info.chatWrapper}, context ${info.contextSize}`);
// Each LLM call's tools, duration and output tokens (a runaway generation shows here).
const traced = {
  apiFormat: client.apiFormat,
  getContextLength: () => client.getContextLength(),
  async send(messages: Record<string, unknown>[], tools: ToolSpec[] = [], options: SendOptions = {}) {
    const before = client.usage.outputTokens;
    const started = performance.now();
    try {
      return await client.send(messages, tools, options);
    } finally {
      if (values.verbose)
        console.log(
          `     [call] tools=${tools.map((tool) => tool.name).join(",")} choice=${JSON.stringify(options.toolChoice ?? null)} out=${client.usage.outputTokens - before} ${((performance.now() - started) / 1000).toFixed(1)}s`,
        );
    }
  },
  sendStream: client.sendStream.bind(client),
};
let finished = 0;
const runs = Number(values.runs);
const all = cases();
for (let run = 0; run < runs; run += 1) {
  const testCase = all[(run + Number(values.case) - 1) % all.length] as Case;
  const started = performance.now();
  const before = client.usage;
  const runner = new WorkflowRunner({
    client: traced,
    contextManager: new ContextManager({
      strategy: new TieredCompact(),
      budgetTokens: info.contextSize - 512,
    }),
    maxIterations: Number(values["max-iterations"]),
    toolSubsets: values.subsets as "steps" | "all",
    onMessage: (message: Message) => {
      if (!values.verbose) return;
      const calls = (message.toolCalls ?? []).map((call) => `${call.name}(${JSON.stringify(call.args)})`);
      console.log(
        `   ${message.metadata.type} ${calls.join(", ")} ${message.content.slice(0, 200).replace(/\s+/g, " ")}`,
      );
    },
  });
  let outcome: string;
  try {
    const result = await runner.run(testCase.workflow, testCase.question);
    outcome = `ok ${JSON.stringify(result)}`;
    finished += 1;
  } catch (error) {
    if (!(error instanceof ForgeError)) throw error;
    outcome = `${error.name}: ${error.message.slice(0, 200)}`;
  }
  const after = client.usage;
  console.log(
    `run ${run + 1} ${testCase.workflow.name}: ${outcome} — ${after.calls - before.calls} calls, ${after.outputTokens - before.outputTokens} tokens out, ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
}
console.log(`finished ${finished}/${runs} (subsets ${values.subsets}, max tokens ${maxTokens ?? "none"})`);
await client.dispose();
