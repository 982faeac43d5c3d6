import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  type CompactEvent,
  ContextManager,
  type ThresholdEvent,
  TieredCompact,
} from "../../src/context/index.ts";
import { defineTool } from "../../src/core/tools.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { type RecordedCall, ScriptedClient, toolCall } from "../../src/testing/index.ts";

/** A 10-step chain whose tool results are long, so a tight budget forces compaction mid-run. */
function chainWorkflow() {
  const steps = Array.from({ length: 8 }, (_, index) =>
    defineTool({
      name: `step_${index}`,
      description: `Step ${index} of the investigation`,
      parameters: z.object({ note: z.string() }),
      execute: ({ note }) =>
        `Result of step ${index} for ${note}: ${"lab value 7.2 mmol/L within range; ".repeat(30)}`,
    }),
  );
  const conclude = defineTool({
    name: "conclude",
    description: "Write the conclusion",
    parameters: z.object({ summary: z.string() }),
    execute: ({ summary }) => `Concluded: ${summary}`,
  });
  return defineWorkflow({
    name: "chain",
    description: "",
    tools: [...steps, conclude],
    requiredSteps: steps.map((tool) => tool.spec.name),
    terminalTool: "conclude",
    systemPrompt: "Investigate step by step.",
  });
}

function wireIsPaired(call: RecordedCall): boolean {
  const ids = call.messages.flatMap(
    (message) => (message.tool_calls as { id: string }[] | undefined)?.map((toolCall) => toolCall.id) ?? [],
  );
  const answers = call.messages
    .filter((message) => message.role === "tool")
    .map((message) => message.tool_call_id);
  return ids.length === answers.length && ids.every((id) => answers.includes(id));
}

describe("compaction inside the loop", () => {
  it("compacts under a tight budget, keeps the wire history paired and still finishes", async () => {
    const workflow = chainWorkflow();
    const script = [
      ...Array.from({ length: 8 }, (_, index) =>
        toolCall(`step_${index}`, { note: "patient 7" }, `Now step ${index}.`),
      ),
      toolCall("conclude", { summary: "all normal" }),
    ];
    const client = new ScriptedClient(script);
    const compactions: CompactEvent[] = [];
    const warnings: ThresholdEvent[] = [];
    const contextManager = new ContextManager({
      strategy: new TieredCompact({ keepRecent: 2 }),
      budgetTokens: 1500,
      onCompact: (event) => compactions.push(event),
      warnAt: [0.5, 0.8],
      onThreshold: (event) => warnings.push(event),
    });
    const runner = new WorkflowRunner({ client, contextManager, maxIterations: 12 });
    await expect(runner.run(workflow, "Investigate patient 7")).resolves.toBe("Concluded: all normal");
    expect(compactions.length).toBeGreaterThan(0);
    expect(Math.max(...compactions.map((event) => event.phaseReached))).toBeGreaterThanOrEqual(2);
    // Each fraction fires when usage first reaches it, and again only after a compaction brought
    // usage back below it (a compaction re-arms the warnings).
    expect(warnings[0]?.fraction).toBe(0.5);
    expect(new Set(warnings.map((event) => event.fraction))).toEqual(new Set([0.5, 0.8]));
    for (const [index, warning] of warnings.entries()) {
      const earlier = warnings
        .slice(0, index)
        .filter((event) => event.fraction === warning.fraction)
        .at(-1);
      if (earlier === undefined) continue;
      expect(
        compactions.some(
          (event) => event.stepIndex >= earlier.stepIndex && event.stepIndex <= warning.stepIndex,
        ),
      ).toBe(true);
    }
    for (const call of client.calls) {
      expect(call.messages[0]).toMatchObject({ role: "system", content: "Investigate step by step." });
      expect(call.messages[1]).toMatchObject({ role: "user", content: "Investigate patient 7" });
      expect(wireIsPaired(call)).toBe(true);
    }
    const last = client.calls.at(-1)?.messages ?? [];
    expect(JSON.stringify(last)).toContain("[Steps completed:");
    // Step enforcement reads the authoritative tracker, not the compacted history.
    expect(client.calls).toHaveLength(9);
  });
});
