/**
 * Per-step tool subsets and escalation on the queue worker (embedded engine): the registry
 * runner's options apply to queued runs, with and without a worker's `endpoints`; the escalation
 * record is in the run's stored checkpoint, and the tiers' pools hear each run end.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { LLMClient } from "../../src/core/types.ts";
import type { EscalationRecord } from "../../src/guardrails/escalation.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { createEmbeddedQueue, defineRegistry, type RunQueue, startWorker } from "../../src/queue/index.ts";
import { ScriptedClient, text, toolCall } from "../../src/testing/index.ts";
import { escalationScripts, flightWorkflow, offeredNames } from "../helpers/flight-workflow.ts";
import { createPassthrough } from "../helpers/workflows.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function embeddedQueue(): Promise<RunQueue> {
  const dir = mkdtempSync(join(tmpdir(), "forge-loop-controls-"));
  const queue = await createEmbeddedQueue({ dir });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  cleanups.push(() => queue.close());
  return queue;
}

/** A ScriptedClient that also hears `endRun`, as an EndpointPool does. */
class PooledScript extends ScriptedClient {
  readonly ended: string[] = [];
  endRun(runId: string): void {
    this.ended.push(runId);
  }
}

const prose = "Let me look into that flight.";

/** The registry's runner: step subsets, and one escalation tier on `strong`. */
function controlledRunner(client: LLMClient, strong: LLMClient, name?: string): WorkflowRunner {
  return new WorkflowRunner({
    client,
    contextManager: createPassthrough(),
    toolSubsets: "steps",
    escalation: { after: 2, client: strong, ...(name && { name }) },
  });
}

describe("startWorker with toolSubsets and escalation", () => {
  it("runs a queued run with the runner's subsets and escalation tier, recorded in its checkpoint", async () => {
    const queue = await embeddedQueue();
    const { workflow } = flightWorkflow();
    const scripts = escalationScripts(text(prose));
    const base = new ScriptedClient(scripts.base);
    const strong = new PooledScript(scripts.strong);
    const runner = controlledRunner(base, strong, "strong");
    await queue.enqueue("flight_update", "TP1?", { runId: "run-1" });
    const worker = startWorker({ queue, registry: defineRegistry({ workflows: [workflow], runner }) });
    cleanups.push(() => worker.close());
    expect(await queue.result("run-1")).toEqual({ tool: "notify_passenger", flight: "TP1" });
    base.assertDone();
    strong.assertDone();
    expect([...base.calls, ...strong.calls].map(offeredNames)).toEqual([
      ["get_flight_status", "get_gate_info"],
      ["get_flight_status", "get_gate_info"],
      ["get_flight_status", "get_gate_info"],
      ["notify_passenger"],
      ["get_flight_status", "get_gate_info"],
    ]);
    const snapshot = (await queue.get("run-1"))?.checkpoint?.snapshot as
      | { context: { escalation: EscalationRecord } }
      | undefined;
    if (snapshot === undefined) throw new Error("run-1 has no stored checkpoint");
    const { context } = snapshot;
    expect(context.escalation.servedBy).toEqual(["base", "base", "strong", "base", "base"]);
    expect(context.escalation.switches.map((change) => change.reason)).toEqual(["retries", "recovered"]);
    expect(strong.ended).toEqual(["run-1"]);
  });

  it("with endpoints, infers through them for the base tier and keeps the tier's own client", async () => {
    const queue = await embeddedQueue();
    const { workflow } = flightWorkflow();
    const unused = new ScriptedClient([]);
    // book_hotel is a tool of the workflow, outside the subset of the first step.
    const scripts = escalationScripts(toolCall("book_hotel", { flight: "TP1" }));
    const endpoints = new PooledScript(scripts.base);
    const strong = new PooledScript(scripts.strong);
    const runner = controlledRunner(unused, strong);
    await queue.enqueue("flight_update", "TP1?", { runId: "run-2" });
    const worker = startWorker({
      queue,
      registry: defineRegistry({ workflows: [workflow], runner }),
      endpoints: endpoints as LLMClient & { endRun(runId: string): void },
    });
    cleanups.push(() => worker.close());
    expect(await queue.result("run-2")).toEqual({ tool: "notify_passenger", flight: "TP1" });
    unused.assertDone();
    endpoints.assertDone();
    strong.assertDone();
    // book_hotel is outside the subset: two unknown-tool replies in a row, then the stronger client.
    expect(endpoints.calls[1]?.messages.at(-1)?.content).toMatch(/^\[UnknownTool\].*book_hotel/);
    expect(endpoints.ended).toEqual(["run-2"]);
    expect(strong.ended).toEqual(["run-2"]);
  });
});
