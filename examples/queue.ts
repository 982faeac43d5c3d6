/**
 * Durable runs on the embedded queue: a producer enqueues runs by id (twice the same id: one run),
 * a worker runs them with checkpoints, a tool gets its idempotency key, and results come back.
 * Closing the worker hands unfinished runs back to the queue; the next worker resumes them from
 * their last checkpoint. The model is scripted unless the environment names a real one
 * (examples/backend.ts).
 *
 * Run it: `npx tsx examples/queue.ts`
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { ContextManager, defineTool, defineWorkflow, NoCompact, WorkflowRunner } from "forge-guardrails";
import { createEmbeddedQueue, defineRegistry, startWorker } from "forge-guardrails/queue";
import { toolCall } from "forge-guardrails/testing";
import { z } from "zod";
import { exampleBackend } from "./backend.ts";

/** Enqueue two orders (one twice), work them, and return their results and the payments made. */
export async function main(log: (line: string) => void = console.log, env: NodeJS.ProcessEnv = process.env) {
  const payments: string[] = [];
  const charge = defineTool({
    name: "charge_card",
    description: "Charge the customer's card",
    parameters: z.object({ order: z.string(), amount: z.number() }),
    effects: "unsafe", // never run twice, even across a crash
    execute: ({ order, amount }, { idempotencyKey }) => {
      payments.push(`${order}:${amount} (${idempotencyKey})`);
      return `charged ${amount} for ${order}`;
    },
  });
  const confirm = defineTool({
    name: "confirm",
    description: "Tell the customer",
    parameters: z.object({ message: z.string() }),
    execute: ({ message }) => message,
  });
  const checkout = defineWorkflow({
    name: "checkout",
    description: "Charge, then confirm",
    tools: [charge, confirm],
    requiredSteps: ["charge_card"],
    terminalTool: "confirm",
    systemPrompt: "You run checkouts.",
  });
  // Two runs' worth of answers (a scripted model answers in order, whichever run asks).
  const { client, budgetTokens } = await exampleBackend(
    ["A1", "B2"].flatMap((order) => [
      toolCall("charge_card", { order, amount: 10 }),
      toolCall("confirm", { message: `Order ${order} is paid.` }),
    ]),
    env,
  );
  const runner = new WorkflowRunner({
    client,
    contextManager: new ContextManager({ strategy: new NoCompact(), budgetTokens }),
  });
  const dir = mkdtempSync(join(tmpdir(), "forge-queue-example-"));
  const queue = await createEmbeddedQueue({ dir });
  try {
    const worker = startWorker({ queue, registry: defineRegistry({ workflows: [checkout], runner }) });
    await queue.enqueue("checkout", "Check out order A1", { runId: "order-A1" });
    await queue.enqueue("checkout", "Check out order A1", { runId: "order-A1" }); // no-op
    await queue.enqueue("checkout", "Check out order B2", { runId: "order-B2" });
    const results = [await queue.result("order-A1"), await queue.result("order-B2")];
    await worker.close();
    for (const result of results) log(String(result));
    log(`payments: ${payments.join(", ")}`);
    return { results, payments, runs: await queue.list() };
  } finally {
    await queue.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
