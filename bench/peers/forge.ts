/**
 * This project's loop under the peers benchmark: `WorkflowRunner` with a `ScriptedClient`, set up
 * as `bench/core.bench.ts` times it (no compaction, a budget that never triggers it).
 */
import { z } from "zod";
import { ContextManager, NoCompact } from "../../src/context/index.ts";
import { defineTool } from "../../src/core/tools.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ScriptedClient } from "../../src/testing/index.ts";
import { noopArgs, type PeerAdapter, timeLoop } from "./peer.ts";

/**
 * The benchmark's workflow (a no-op tool and a terminal one) and its script of `steps` calls, built
 * with the given `defineTool` / `defineWorkflow`, so `bench/loop-length-ab.ts` can build it from
 * another tree's source.
 */
export function createBenchRun(api: {
  defineTool: typeof defineTool;
  defineWorkflow: typeof defineWorkflow;
}) {
  const workflow = api.defineWorkflow({
    name: "bench",
    description: "",
    tools: [
      api.defineTool({
        name: "noop",
        description: "does nothing",
        parameters: z.object({ i: z.number() }),
        execute: () => "ok",
      }),
      api.defineTool({
        name: "finish",
        description: "ends",
        parameters: z.object({}),
        execute: () => "done",
      }),
    ],
    terminalTool: "finish",
    systemPrompt: "s",
  });
  const script = (steps: number) =>
    Array.from({ length: steps }, (_, step) =>
      step === steps - 1 ? [{ tool: "finish", args: {} }] : [{ tool: "noop", args: noopArgs(step) }],
    );
  return { workflow, script };
}

const { workflow, script } = createBenchRun({ defineTool, defineWorkflow });

/** `WorkflowRunner` adapter. */
export function forgePeer(version: string): PeerAdapter {
  return {
    name: "forge-guardrails (WorkflowRunner)",
    version,
    async run(steps) {
      const client = new ScriptedClient(script(steps));
      const contextManager = new ContextManager({ strategy: new NoCompact(), budgetTokens: 100_000_000 });
      const runner = new WorkflowRunner({ client, contextManager, maxIterations: steps });
      const elapsed = await timeLoop(() => runner.run(workflow, "go"));
      client.assertDone();
      return elapsed;
    },
  };
}
