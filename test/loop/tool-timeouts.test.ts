/**
 * Tool timeouts (`defineTool({ timeoutMs })`, `WorkflowRunner`'s `toolTimeoutMs`): a call past its
 * timeout has its signal aborted and is answered with a ToolTimeoutError tool error; the run goes on.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  ForgeError,
  ToolExecutionError,
  ToolTimeoutError,
  WorkflowDefinitionError,
} from "../../src/core/errors.ts";
import { type Message, MessageType } from "../../src/core/messages.ts";
import { defineTool, type ToolCallContext, type ToolEffects } from "../../src/core/tools.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import { createPassthrough, rejectionOf } from "../helpers/workflows.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `slow` returns `late` after `takesMs` (ignoring its signal); `quick` returns at once; `finish` ends. */
function slowWorkflow(options: { takesMs: number; timeoutMs?: number; effects?: ToolEffects }) {
  const seen: { context: ToolCallContext; abortedAt?: number; startedAt: number }[] = [];
  const slow = defineTool({
    name: "slow",
    description: "Slow",
    parameters: z.object({}),
    ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
    ...(options.effects && { effects: options.effects }),
    execute: (_args, context) => {
      const entry: (typeof seen)[number] = { context, startedAt: Date.now() };
      seen.push(entry);
      context.signal.addEventListener("abort", () => {
        entry.abortedAt = Date.now();
      });
      return new Promise((resolve) => setTimeout(() => resolve("late"), options.takesMs));
    },
  });
  const quick = defineTool({
    name: "quick",
    description: "Quick",
    parameters: z.object({}),
    execute: () => "quick",
  });
  const finish = defineTool({
    name: "finish",
    description: "Done",
    parameters: z.object({}),
    execute: () => "ok",
  });
  const workflow = defineWorkflow({
    name: "slow",
    description: "",
    tools: [slow, quick, finish],
    terminalTool: "finish",
    systemPrompt: "s",
  });
  return { workflow, seen };
}

function run(
  workflow: ReturnType<typeof slowWorkflow>["workflow"],
  script: ConstructorParameters<typeof ScriptedClient>[0],
  options: Partial<ConstructorParameters<typeof WorkflowRunner>[0]> = {},
) {
  const messages: Message[] = [];
  const runner = new WorkflowRunner({
    client: new ScriptedClient(script),
    contextManager: createPassthrough(),
    onMessage: (message) => messages.push(message),
    ...options,
  });
  return { result: runner.run(workflow, "go"), messages };
}

const results = (messages: readonly Message[]) =>
  messages
    .filter((message) => message.metadata.type === MessageType.TOOL_RESULT)
    .map((message) => [message.toolName, message.content]);

describe("tool timeouts", () => {
  it("answers a call past its tool's timeoutMs with a ToolTimeoutError tool error, and the run goes on", async () => {
    const { workflow } = slowWorkflow({ takesMs: 300, timeoutMs: 30 });
    const { result, messages } = run(workflow, [toolCall("slow"), toolCall("finish")]);
    await expect(result).resolves.toBe("ok");
    expect(results(messages)).toEqual([
      ["slow", "[ToolError] ToolTimeoutError: 'slow' did not return within 30 ms"],
      ["finish", "ok"],
    ]);
  });

  it("aborts the call's signal with the ToolTimeoutError, and drops its late result", async () => {
    const { workflow, seen } = slowWorkflow({ takesMs: 120, timeoutMs: 20 });
    const { result, messages } = run(workflow, [toolCall("slow"), toolCall("finish")]);
    await result;
    const [call] = seen;
    expect(call?.context.signal.aborted).toBe(true);
    expect(call?.context.signal.reason).toBeInstanceOf(ToolTimeoutError);
    expect(call?.context.signal.reason).toMatchObject({
      toolName: "slow",
      timeoutMs: 20,
      outcomeUnknown: false,
    });
    expect((call?.abortedAt ?? 0) - (call?.startedAt ?? 0)).toBeGreaterThanOrEqual(15);
    await sleep(150);
    expect(messages.some((message) => message.content === "late")).toBe(false);
  });

  it("applies the runner's toolTimeoutMs to tools without one; a tool's own wins", async () => {
    const fallback = slowWorkflow({ takesMs: 300 });
    const first = run(fallback.workflow, [toolCall("slow"), toolCall("finish")], { toolTimeoutMs: 25 });
    await first.result;
    expect(results(first.messages)[0]?.[1]).toBe(
      "[ToolError] ToolTimeoutError: 'slow' did not return within 25 ms",
    );
    const own = slowWorkflow({ takesMs: 40, timeoutMs: 1_000 });
    const second = run(own.workflow, [toolCall("slow"), toolCall("finish")], { toolTimeoutMs: 5 });
    await second.result;
    expect(results(second.messages)[0]).toEqual(["slow", "late"]);
  });

  it("has no timeout by default", async () => {
    const { workflow, seen } = slowWorkflow({ takesMs: 60 });
    const { result, messages } = run(workflow, [toolCall("slow"), toolCall("finish")]);
    await result;
    expect(results(messages)[0]).toEqual(["slow", "late"]);
    expect(seen[0]?.context.signal.aborted).toBe(false);
  });

  it("counts a timeout against maxToolErrors like any tool error", async () => {
    const { workflow } = slowWorkflow({ takesMs: 300, timeoutMs: 10 });
    const { result } = run(workflow, [toolCall("slow"), toolCall("slow")], { maxToolErrors: 1 });
    const error = await rejectionOf(result);
    expect(error).toBeInstanceOf(ToolExecutionError);
    expect(error.toolName).toBe("slow");
    expect(error.cause).toBeInstanceOf(ToolTimeoutError);
  });

  it("tells the model an unsafe tool's outcome is unknown, and never runs it again by itself", async () => {
    const { workflow, seen } = slowWorkflow({ takesMs: 300, timeoutMs: 20, effects: "unsafe" });
    const { result, messages } = run(workflow, [toolCall("slow"), toolCall("finish")]);
    await result;
    expect(seen).toHaveLength(1);
    const [answer] = results(messages);
    expect(answer?.[1]).toMatch(/^\[ToolError\] ToolTimeoutError: 'slow' did not return within 20 ms\. /);
    expect(answer?.[1]).toContain("may or may not have happened");
    expect(seen[0]?.context.signal.reason).toMatchObject({ outcomeUnknown: true });
  });

  it("times out one call of a concurrent batch; the others' results keep their places", async () => {
    const { workflow } = slowWorkflow({ takesMs: 300, timeoutMs: 20 });
    const batch = [
      { tool: "quick", args: {} },
      { tool: "slow", args: {} },
      { tool: "quick", args: {} },
    ];
    const { result, messages } = run(workflow, [batch, toolCall("finish")], { toolConcurrency: 3 });
    await result;
    expect(results(messages)).toEqual([
      ["quick", "quick"],
      ["slow", "[ToolError] ToolTimeoutError: 'slow' did not return within 20 ms"],
      ["quick", "quick"],
      ["finish", "ok"],
    ]);
  });

  it("is a ForgeError named ToolTimeoutError", () => {
    const error = new ToolTimeoutError("slow", "abc123def", 50);
    expect(error).toBeInstanceOf(ForgeError);
    expect(error.name).toBe("ToolTimeoutError");
    expect(error.message).toBe("'slow' did not return within 50 ms");
  });

  it("refuses a timeoutMs that is not a positive integer, on a tool and on the runner", () => {
    for (const timeoutMs of [0, -5, 2.5, Number.NaN]) {
      expect(() =>
        defineTool({ name: "t", description: "", parameters: z.object({}), execute: () => 1, timeoutMs }),
      ).toThrow(WorkflowDefinitionError);
      expect(
        () =>
          new WorkflowRunner({
            client: new ScriptedClient([]),
            contextManager: createPassthrough(),
            toolTimeoutMs: timeoutMs,
          }),
      ).toThrow(/toolTimeoutMs/);
    }
  });
});
