/**
 * Rescue inside the loop: a Qwen-Coder call written as text gets its values converted by the
 * tool's schema (the loop passes the workflow's tool specs), and Mistral's `[TOOL_CALLS]name{json}`
 * runs the tool.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool } from "../../src/core/tools.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { runInference } from "../../src/loop/inference.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ScriptedClient, text } from "../../src/testing/index.ts";
import { createPassthrough } from "../helpers/workflows.ts";

function lookupWorkflow() {
  const received: unknown[] = [];
  const lookup = defineTool({
    name: "lookup",
    description: "Look up a postal code",
    parameters: z.object({ zip: z.string(), limit: z.number().int(), exact: z.boolean() }),
    execute: (args) => {
      received.push(args);
      return `found ${args.zip}`;
    },
  });
  const workflow = defineWorkflow({
    name: "lookup",
    description: "Look up a zip",
    tools: [lookup],
    terminalTool: "lookup",
    systemPrompt: "Use the tool.",
  });
  return { workflow, received, lookup };
}

const QWEN_CODER =
  "<tool_call>\n<function=lookup>\n<parameter=zip>\n02134\n</parameter>\n<parameter=limit>\n10\n</parameter>\n<parameter=exact>\ntrue\n</parameter>\n</function>\n</tool_call>";

describe("rescue in the loop", () => {
  it("converts a Qwen-Coder call's values by the tool's schema: the zip keeps its zero, the limit is a number", async () => {
    const { workflow, received } = lookupWorkflow();
    const client = new ScriptedClient([text(QWEN_CODER)]);
    const runner = new WorkflowRunner({ client, contextManager: createPassthrough() });
    await expect(runner.run(workflow, "Look up 02134")).resolves.toBe("found 02134");
    expect(received).toEqual([{ zip: "02134", limit: 10, exact: true }]);
  });

  it("runs Mistral's [TOOL_CALLS]name{json} after an apology", async () => {
    const { workflow, received } = lookupWorkflow();
    const client = new ScriptedClient([
      text('I apologize.\n[TOOL_CALLS]lookup {"zip": "02134", "limit": 3, "exact": false}'),
    ]);
    const runner = new WorkflowRunner({ client, contextManager: createPassthrough() });
    await expect(runner.run(workflow, "Look up 02134")).resolves.toBe("found 02134");
    expect(received).toEqual([{ zip: "02134", limit: 3, exact: false }]);
  });

  it("converts the values in runInference too (the proxy's front half)", async () => {
    const { lookup } = lookupWorkflow();
    const result = await runInference({
      client: new ScriptedClient([text(QWEN_CODER)]),
      contextManager: createPassthrough(),
      tools: [lookup.spec],
      messages: [],
    });
    expect(result.toolCalls.map((call) => call.args)).toEqual([{ zip: "02134", limit: 10, exact: true }]);
  });
});
