/**
 * startWorker({ observers }): each run the worker takes is told to the observers asked for it, on
 * the one registry runner; two runs at once never mix.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import type { RunObserver } from "../../src/core/run-observer.ts";
import { defineTool } from "../../src/core/tools.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { createEmbeddedQueue, defineRegistry, startWorker } from "../../src/queue/index.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const echo = defineWorkflow({
  name: "echo",
  description: "Say the message back",
  tools: [
    defineTool({
      name: "say",
      description: "Say it",
      parameters: z.object({ text: z.string() }),
      execute: ({ text }) => `said ${text}`,
    }),
  ],
  terminalTool: "say",
  systemPrompt: "Echo.",
});

describe("startWorker({ observers })", () => {
  it("tells each run's own observers that run's calls and messages, on one runner", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-observer-queue-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const queue = await createEmbeddedQueue({ dir });
    cleanups.push(() => queue.close());
    // The model says back the last user message, whichever run it is.
    const answer = (call: { messages: Record<string, unknown>[] }) =>
      toolCall("say", {
        text: String(call.messages.findLast((message) => message.role === "user")?.content),
      });
    const runner = new WorkflowRunner({
      client: new ScriptedClient([answer, answer]),
      contextManager: { maybeCompact: (messages) => messages },
    });
    const seen = new Map<string, string[]>();
    const asked: { runId: string; workflow: string; resumed: boolean; attempt: number }[] = [];
    const observersFor = (run: (typeof asked)[number]): RunObserver[] => {
      asked.push(run);
      const lines: string[] = [];
      seen.set(run.runId, lines);
      return [
        {
          onMessage: (message) => lines.push(`${message.metadata.type}: ${message.content.slice(0, 12)}`),
          onLLMCallEnd: ({ runId }) => lines.push(`llm ${runId}`),
          onToolResult: ({ runId, content }) => lines.push(`tool ${runId} ${content}`),
        },
      ];
    };
    await queue.enqueue("echo", "one", { runId: "run-1" });
    await queue.enqueue("echo", "two", { runId: "run-2" });
    const worker = startWorker({
      queue,
      registry: defineRegistry({ workflows: [echo], runner }),
      concurrency: 2,
      pollMs: 20,
      observers: observersFor,
    });
    cleanups.push(() => worker.close());
    expect(await queue.result("run-1")).toBe("said one");
    expect(await queue.result("run-2")).toBe("said two");
    expect(asked.sort((a, b) => a.runId.localeCompare(b.runId))).toEqual([
      { runId: "run-1", workflow: "echo", resumed: false, attempt: 1 },
      { runId: "run-2", workflow: "echo", resumed: false, attempt: 1 },
    ]);
    for (const [runId, text] of [
      ["run-1", "one"],
      ["run-2", "two"],
    ] as const) {
      expect(seen.get(runId)).toEqual([
        "system_prompt: Echo.",
        `user_input: ${text}`,
        `llm ${runId}`,
        `tool_call: `,
        `tool ${runId} said ${text}`,
        `tool_result: said ${text}`,
      ]);
    }
  });
});
