/**
 * Human approval: a refund above 100 waits for a person. Once in-process (the run parks with an
 * `AwaitingApprovalError`, the snapshot is stored, a person approves, the run resumes from the
 * stored snapshot), and once on the embedded run queue (the run parks as `awaiting_approval`,
 * holding no worker, and `queue.deny` sends the person's reason to the model). Here the model is
 * a ScriptedClient; swap in any `LLMClient`.
 *
 * Run it: `npx tsx examples/approval.ts`
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { AwaitingApprovalError, defineTool, defineWorkflow, WorkflowRunner } from "forge-guardrails";
import { createEmbeddedQueue, defineRegistry, startWorker } from "forge-guardrails/queue";
import { ScriptedClient, toolCall } from "forge-guardrails/testing";
import { z } from "zod";

/** Run the refund workflow both ways; returns what happened for the test to check. */
export async function main(log: (line: string) => void = console.log) {
  const refunds: string[] = [];
  const refund = defineTool({
    name: "refund",
    description: "Refund an order",
    parameters: z.object({ order: z.string(), amount: z.number() }),
    effects: "unsafe", // never run twice, even across a crash
    needsApproval: ({ amount }) => Number(amount) > 100, // a person decides large refunds
    execute: ({ order, amount }, { idempotencyKey }) => {
      refunds.push(`${order}:${amount} (${idempotencyKey})`);
      return `refunded ${amount} for ${order}`;
    },
  });
  const reply = defineTool({
    name: "reply",
    description: "Answer the customer",
    parameters: z.object({ message: z.string() }),
    execute: ({ message }) => message,
  });
  const support = defineWorkflow({
    name: "support",
    description: "Refund, then reply",
    tools: [refund, reply],
    terminalTool: "reply",
    systemPrompt: "You handle refunds.",
  });
  const answers = (order: string) => [
    toolCall("refund", { order, amount: 250 }),
    toolCall("reply", { message: `Order ${order}: done.` }),
  ];
  const runner = (script: ReturnType<typeof answers>) =>
    new WorkflowRunner({ client: new ScriptedClient(script), contextManager: { maybeCompact: (m) => m } });

  // 1. In process: the run parks; store error.snapshot and error.meta anywhere (JSON).
  let stored = "";
  let callId = "";
  try {
    await runner(answers("A1").slice(0, 1)).run(support, "Refund order A1");
  } catch (error) {
    if (!(error instanceof AwaitingApprovalError)) throw error;
    const [pending] = error.pending;
    log(`waiting: ${pending?.tool} ${JSON.stringify(pending?.args)}`);
    callId = pending?.callId ?? "";
    stored = JSON.stringify({ snapshot: error.snapshot, meta: error.meta });
  }
  // … later, maybe in another process: a person approves, the run goes on from the snapshot.
  const { snapshot, meta } = JSON.parse(stored);
  const first = await runner(answers("A1").slice(1)).resume(support, snapshot, {
    meta,
    decisions: [{ callId, approved: true }],
  });
  log(String(first));

  // 2. On a run queue: the run parks as awaiting_approval; a denial's reason reaches the model.
  const dir = mkdtempSync(join(tmpdir(), "forge-approval-example-"));
  const queue = await createEmbeddedQueue({ dir });
  try {
    const worker = startWorker({
      queue,
      registry: defineRegistry({ workflows: [support], runner: runner(answers("B2")) }),
    });
    await queue.enqueue("support", "Refund order B2", { runId: "order-B2" });
    while ((await queue.get("order-B2"))?.status !== "awaiting_approval") {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    log(`order-B2 is ${(await queue.get("order-B2"))?.status}`);
    await queue.deny("order-B2", { reason: "refunds above 100 need a manager" }); // or `forge runs deny`
    const second = await queue.result("order-B2");
    await worker.close();
    log(String(second));
    log(`refunds: ${refunds.join(", ")}`);
    return { results: [first, second], refunds, record: await queue.get("order-B2") };
  } finally {
    await queue.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
