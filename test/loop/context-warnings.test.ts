/**
 * Context warnings that reach the model: when usage crosses a `warnAt` fraction, the next request
 * carries a transient CONTEXT_WARNING user message (never kept in the history); a compaction that
 * brings usage back below re-arms it. Real ContextManager and compaction strategy, scripted model.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ContextManager } from "../../src/context/context-manager.ts";
import { SlidingWindowCompact } from "../../src/context/sliding-window-compact.ts";
import { type Message, MessageType } from "../../src/core/messages.ts";
import { defineTool } from "../../src/core/tools.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";

const fetchPage = defineTool({
  name: "fetch_page",
  description: "Fetch a page",
  parameters: z.object({ page: z.number() }),
  // ~100 tokens by the char estimate.
  execute: ({ page }) => `page ${page}: ${"lorem ipsum ".repeat(33)}`,
});
const finish = defineTool({
  name: "finish",
  description: "Done",
  parameters: z.object({}),
  execute: () => "ok",
});
const workflow = defineWorkflow({
  name: "reader",
  description: "Read pages",
  tools: [fetchPage, finish],
  requiredSteps: [],
  terminalTool: "finish",
  systemPrompt: "Read the pages, then finish.",
});

async function run(options: { contextWarnings?: boolean; pages: number }) {
  const compactions: number[] = [];
  const manager = new ContextManager({
    strategy: new SlidingWindowCompact({ keepRecent: 1 }),
    budgetTokens: 1000,
    warnAt: [0.5],
    compactThreshold: 0.8,
    compactTarget: 0.3,
    onCompact: (event) => compactions.push(event.stepIndex),
  });
  const script = [
    ...Array.from({ length: options.pages }, (_, page) => toolCall("fetch_page", { page })),
    toolCall("finish"),
  ];
  const client = new ScriptedClient(script);
  const history: Message[] = [];
  const runner = new WorkflowRunner({
    client,
    contextManager: manager,
    maxIterations: options.pages + 1,
    onMessage: (message) => history.push(message),
    ...(options.contextWarnings !== undefined && { contextWarnings: options.contextWarnings }),
  });
  await runner.run(workflow, "Read 12 pages.");
  const warned = client.calls
    .map((call, index) => ({ index, last: call.messages.at(-1) as { role: string; content: string } }))
    .filter(({ last }) => last.content.startsWith("[ContextWarning]"));
  return { warned, compactions, history, client };
}

describe("context warnings", () => {
  it("are sent once when usage crosses warnAt, as the last (user) message of that request only", async () => {
    const { warned, history, client } = await run({ pages: 5 });
    expect(warned).toHaveLength(1);
    const [first] = warned;
    expect(first?.last.role).toBe("user");
    expect(first?.last.content).toMatch(/^\[ContextWarning\] The conversation has used 50% of its context/);
    // The request after it does not repeat it.
    const next = client.calls[(first?.index ?? 0) + 1]?.messages.at(-1) as { content: string } | undefined;
    expect(next?.content ?? "").not.toContain("[ContextWarning]");
    // Transient: never in the history.
    expect(history.some((message) => message.metadata.type === MessageType.CONTEXT_WARNING)).toBe(false);
  });

  it("fire again after a compaction brings usage back below the fraction", async () => {
    const { warned, compactions } = await run({ pages: 12 });
    expect(compactions.length).toBeGreaterThan(0);
    expect(warned.length).toBeGreaterThan(1);
    // Each warning after the first follows a compaction.
    for (const [index, warning] of warned.entries()) {
      if (index === 0) continue;
      const previous = warned[index - 1]?.index ?? 0;
      expect(compactions.some((step) => step >= previous && step < warning.index)).toBe(true);
    }
  });

  it("are not sent with contextWarnings: false (the callback still fires)", async () => {
    const { warned } = await run({ pages: 5, contextWarnings: false });
    expect(warned).toHaveLength(0);
  });
});

describe("context warnings of runs under way at once on one runner", () => {
  it("reach each run that crosses warnAt: one run's warning never uses up another's", async () => {
    const manager = new ContextManager({
      strategy: new SlidingWindowCompact({ keepRecent: 1 }),
      budgetTokens: 1000,
      warnAt: [0.5],
      compactThreshold: 0.9,
    });
    // Both runs read a long page (~600 tokens), then finish. The runs start together, so both
    // read before either asks again: each crosses 50 % on its second request.
    const longRead = defineTool({
      name: "fetch_page",
      description: "Fetch a page",
      parameters: z.object({ page: z.number() }),
      execute: () => "lorem ipsum ".repeat(200),
    });
    const reader = defineWorkflow({
      name: "long-reader",
      description: "Read a long page",
      tools: [longRead, finish],
      requiredSteps: [],
      terminalTool: "finish",
      systemPrompt: "Read the page, then finish.",
    });
    const client = new ScriptedClient([
      toolCall("fetch_page", { page: 1 }),
      toolCall("fetch_page", { page: 2 }),
      toolCall("finish"),
      toolCall("finish"),
    ]);
    const runner = new WorkflowRunner({ client, contextManager: manager });
    await Promise.all([runner.run(reader, "Read page 1."), runner.run(reader, "Read page 2.")]);
    expect(client.calls).toHaveLength(4);
    const warnedRuns = client.calls
      .filter((call) =>
        String((call.messages.at(-1) as { content: string }).content).startsWith("[ContextWarning]"),
      )
      .map((call) =>
        String((call.messages.find((message) => message.role === "user") as { content: string }).content),
      );
    expect(warnedRuns.sort()).toEqual(["Read page 1.", "Read page 2."]);
  });
});
