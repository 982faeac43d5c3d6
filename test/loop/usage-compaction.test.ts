/**
 * Token accounting from the backend inside the loop: the prompt tokens a client reports through
 * `onUsage` drive the count the ContextManager compacts on (the estimate only before the first
 * answer), and the workflow's tools are counted with the history.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type CompactEvent, ContextManager } from "../../src/context/context-manager.ts";
import { SlidingWindowCompact } from "../../src/context/sliding-window-compact.ts";
import type { Message } from "../../src/core/messages.ts";
import { defineTool } from "../../src/core/tools.ts";
import type { LLMClient, SendOptions } from "../../src/core/types.ts";
import { defineWorkflow, workflowToolSpecs } from "../../src/core/workflow.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";

const step = defineTool({
  name: "step",
  description: "One step",
  parameters: z.object({ n: z.number() }),
  execute: ({ n }) => `step ${n} done`,
});
const finish = defineTool({
  name: "finish",
  description: "Done",
  parameters: z.object({}),
  execute: () => "ok",
});
const workflow = defineWorkflow({
  name: "steps",
  description: "Some steps",
  tools: [step, finish],
  terminalTool: "finish",
  systemPrompt: "Go.",
});

/** A scripted model that reports `promptTokens(callIndex)` as the backend's count of each prompt. */
function reporting(promptTokens: (index: number) => number): LLMClient {
  const scripted = new ScriptedClient([
    ...[1, 2, 3, 4].map((n) => toolCall("step", { n })),
    toolCall("finish"),
  ]);
  let index = 0;
  return {
    apiFormat: scripted.apiFormat,
    getContextLength: () => scripted.getContextLength(),
    sendStream: (messages, tools, options) => scripted.sendStream(messages, tools, options),
    async send(messages, tools, options?: SendOptions) {
      const response = await scripted.send(messages, tools, options);
      options?.onUsage?.({ promptTokens: promptTokens(index++) });
      return response;
    },
  };
}

async function compactionsWith(promptTokens: (index: number) => number): Promise<CompactEvent[]> {
  const compactions: CompactEvent[] = [];
  const contextManager = new ContextManager({
    strategy: new SlidingWindowCompact({ keepRecent: 1 }),
    budgetTokens: 1000,
    onCompact: (event) => compactions.push(event),
  });
  const runner = new WorkflowRunner({ client: reporting(promptTokens), contextManager });
  await expect(runner.run(workflow, "Do the steps")).resolves.toBe("ok");
  return compactions;
}

describe("usage-driven compaction", () => {
  it("the estimate alone never reaches the threshold on this short run", async () => {
    expect(await compactionsWith(() => 0)).toEqual([]);
  });

  it("the backend's count does: a prompt it counted at 900 tokens compacts on the next pass", async () => {
    const compactions = await compactionsWith((index) => (index === 0 ? 900 : 100));
    expect(compactions.length).toBeGreaterThan(0);
    expect(compactions[0]?.stepIndex).toBe(1);
    expect(compactions[0]?.tokensBefore).toBeGreaterThanOrEqual(900);
  });

  it("counts the workflow's tools with the history", async () => {
    const counted: number[] = [];
    const contextManager = new ContextManager({
      strategy: new SlidingWindowCompact({ keepRecent: 1 }),
      budgetTokens: 1000,
      // Fires on the first request: its event holds the count the run decided on.
      warnAt: [0.001],
      onThreshold: (event) => counted.push(event.tokens),
    });
    const client = new ScriptedClient([toolCall("finish")]);
    const history: Message[] = [];
    const runner = new WorkflowRunner({
      client,
      contextManager,
      onMessage: (message) => history.push(message),
    });
    await runner.run(workflow, "Do the steps");
    // The first request: the system prompt and the user's message.
    const messagesOnly = contextManager.estimateTokens(history.slice(0, 2));
    const tools = new ContextManager({
      strategy: new SlidingWindowCompact({ keepRecent: 1 }),
      budgetTokens: 1000,
    });
    tools.setTools(workflowToolSpecs(workflow));
    expect(tools.toolTokens).toBeGreaterThan(0);
    expect(counted).toEqual([messagesOnly + tools.toolTokens]);
  });
});
