/**
 * RunObserver: each hook is told once, where the thing happens, in the run's order; several
 * observers hear the same; one that throws never breaks the run and is logged once; a resumed
 * run and runInference report through the same seam.
 */
import { describe, expect, it } from "vitest";
import { type CompactEvent, ContextManager } from "../../src/context/context-manager.ts";
import { SlidingWindowCompact } from "../../src/context/index.ts";
import type { Message } from "../../src/core/messages.ts";
import type { CompactionMeasure, RunEndEvent, RunObserver } from "../../src/core/run-observer.ts";
import type { LLMClient, LLMResponse, SendOptions } from "../../src/core/types.ts";
import type { CheckpointMeta } from "../../src/loop/checkpoint.ts";
import { runInference } from "../../src/loop/inference.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import { createPassthrough, rejectionOf, weatherWorkflow } from "../helpers/workflows.ts";

/** An observer that writes each event as one line, in the order they come. */
function recorder() {
  const lines: string[] = [];
  const observer: Required<Omit<RunObserver, "onRunStart" | "onRunEnd">> = {
    onState: ({ state, iteration }) => lines.push(`state ${state}@${iteration}`),
    onMessage: (message) => lines.push(`message ${message.metadata.type}`),
    onLLMCallStart: ({ iteration }) => lines.push(`llm.start@${iteration}`),
    onLLMCallEnd: ({ iteration, error }) => lines.push(`llm.end@${iteration}${error ? " error" : ""}`),
    onToolCall: ({ tool, attempt }) => lines.push(`tool.call ${tool}#${attempt}`),
    onToolResult: ({ tool, status }) => lines.push(`tool.result ${tool} ${status}`),
    onCompaction: ({ before, after }) => lines.push(`compaction ${before.length}→${after.length}`),
  };
  return { lines, observer };
}

const WEATHER_SCRIPT = [
  toolCall("get_weather", { city: "Paris" }),
  toolCall("report_weather", { city: "Paris", weather: "sunny" }),
];

/** The lines of the two-step weather run, from its first message to `done`. */
const WEATHER_LINES = [
  "message system_prompt",
  "message user_input",
  "state compact@0",
  "state infer@1",
  "llm.start@1",
  "llm.end@1",
  "state validate@1",
  "state enforce@1",
  "message tool_call",
  "state execute@1",
  "tool.call get_weather#1",
  "tool.result get_weather ok",
  "message tool_result",
  "state review@1",
  "state compact@1",
  "state infer@2",
  "llm.start@2",
  "llm.end@2",
  "state validate@2",
  "state enforce@2",
  "message tool_call",
  "state execute@2",
  "tool.call report_weather#1",
  "tool.result report_weather ok",
  "message tool_result",
  "state review@2",
  "state done@2",
];

describe("RunObserver on WorkflowRunner.run", () => {
  it("tells each state, message, LLM call and tool call once, in the run's order", async () => {
    const { workflow } = weatherWorkflow();
    const client = new ScriptedClient(WEATHER_SCRIPT);
    const { lines, observer } = recorder();
    const runner = new WorkflowRunner({ client, contextManager: createPassthrough() });
    await runner.run(workflow, "Weather?", { promptVars: { user: "Ada" }, observers: [observer] });
    expect(lines).toEqual(WEATHER_LINES);
  });

  it("gives an LLM call's messages, tools, answer, usage and timing; a tool call's arguments and result", async () => {
    const { workflow } = weatherWorkflow();
    const script = new ScriptedClient(WEATHER_SCRIPT);
    // A client that reports usage, as the HTTP clients do through SendOptions.onUsage.
    const client: LLMClient = {
      apiFormat: "openai",
      getContextLength: async () => null,
      sendStream: (...args) => script.sendStream(...args),
      async send(messages, tools, options: SendOptions = {}) {
        options.onUsage?.({ promptTokens: 40 + messages.length, completionTokens: 5 });
        return script.send(messages, tools, options);
      },
    };
    const ends: Parameters<Required<RunObserver>["onLLMCallEnd"]>[0][] = [];
    const results: Parameters<Required<RunObserver>["onToolResult"]>[0][] = [];
    const runner = new WorkflowRunner({ client, contextManager: createPassthrough() });
    await runner.run(workflow, "Weather?", {
      promptVars: { user: "Ada" },
      runId: "run-1",
      observers: [
        { onLLMCallEnd: (event) => ends.push(event), onToolResult: (event) => results.push(event) },
      ],
    });

    expect(ends).toHaveLength(2);
    const [first, second] = ends;
    expect(first?.runId).toBe("run-1");
    expect(first?.messages).toEqual(script.calls[0]?.messages);
    expect(second?.messages).toEqual(script.calls[1]?.messages);
    expect(first?.tools?.map((tool) => tool.name)).toEqual(["get_weather", "report_weather"]);
    expect(first?.response).toEqual(WEATHER_SCRIPT[0]);
    expect(first?.error).toBeNull();
    expect(first?.usage).toEqual({ promptTokens: 42, completionTokens: 5 });
    expect(second?.usage).toEqual({ promptTokens: 44, completionTokens: 5 });
    expect(first?.durationMs).toBeGreaterThanOrEqual(0);
    expect(second?.startedAt).toBeGreaterThanOrEqual((first?.startedAt ?? 0) + (first?.durationMs ?? 0));

    expect(
      results.map(({ tool, args, status, content, runId }) => ({ tool, args, status, content, runId })),
    ).toEqual([
      {
        tool: "get_weather",
        args: { city: "Paris" },
        status: "ok",
        content: "22°C and sunny in Paris",
        runId: "run-1",
      },
      {
        tool: "report_weather",
        args: { city: "Paris", weather: "sunny" },
        status: "ok",
        content: JSON.stringify({ reported: "Paris: sunny" }),
        runId: "run-1",
      },
    ]);
    expect(results[0]?.callId).toMatch(/^[0-9a-z]{9}$/);
  });

  it("tells a failed LLM call's error, and a failing tool's error result", async () => {
    const { workflow } = weatherWorkflow({ failWeather: 1 });
    const backendDown = new Error("backend down");
    const client = new ScriptedClient([toolCall("get_weather", { city: "Paris" }), backendDown]);
    const { lines, observer } = recorder();
    const errors: unknown[] = [];
    const runner = new WorkflowRunner({ client, contextManager: createPassthrough() });
    await rejectionOf(
      runner.run(workflow, "Weather?", {
        promptVars: { user: "Ada" },
        observers: [observer, { onLLMCallEnd: ({ error, response }) => errors.push(error ?? response) }],
      }),
    );
    expect(lines).toContain("tool.result get_weather error");
    expect(lines.slice(-3)).toEqual(["llm.start@2", "llm.end@2 error", "state failed@2"]);
    expect(errors).toEqual([WEATHER_SCRIPT[0], backendDown]);
  });

  it("tells a compaction with the history before and after it", async () => {
    const { workflow } = weatherWorkflow();
    const client = new ScriptedClient(WEATHER_SCRIPT);
    // Drops everything between the system prompt and the last two messages, from the second pass on.
    const contextManager = {
      maybeCompact: (messages: Message[], stepIndex?: number) =>
        (stepIndex ?? 0) >= 1 ? [messages[0] as Message, ...messages.slice(-2)] : messages,
    };
    const compactions: { iteration: number; before: number; after: number }[] = [];
    const runner = new WorkflowRunner({ client, contextManager });
    await runner.run(workflow, "Weather?", {
      promptVars: { user: "Ada" },
      observers: [
        {
          onCompaction: ({ iteration, before, after }) =>
            compactions.push({ iteration, before: before.length, after: after.length }),
        },
      ],
    });
    expect(compactions).toEqual([{ iteration: 2, before: 4, after: 3 }]);
  });

  it("tells the run's start with its machine, and its end with the result or the error run rejects with", async () => {
    const { workflow } = weatherWorkflow();
    const runner = new WorkflowRunner({
      client: new ScriptedClient([...WEATHER_SCRIPT, new Error("backend down")]),
      contextManager: createPassthrough(),
    });
    const told: string[] = [];
    const ends: RunEndEvent[] = [];
    const observer: RunObserver = {
      onRunStart: ({ runId, machine, resumed }) =>
        told.push(`start ${runId} ${machine.id} ${resumed ? "resumed" : "fresh"}`),
      onMessage: (message) => told.push(`message ${message.metadata.type}`),
      onRunEnd: (event) => {
        told.push(`end ${event.runId} ${event.status}`);
        ends.push(event);
      },
    };
    await runner.run(workflow, "Weather?", {
      promptVars: { user: "Ada" },
      runId: "r1",
      observers: [observer],
    });
    const error = await rejectionOf(
      runner.run(workflow, "Weather?", { promptVars: { user: "Ada" }, runId: "r2", observers: [observer] }),
    );
    expect(told.filter((line) => !line.startsWith("message tool"))).toEqual([
      "message system_prompt",
      "message user_input",
      "start r1 workflow fresh",
      "end r1 done",
      "message system_prompt",
      "message user_input",
      "start r2 workflow fresh",
      "end r2 failed",
    ]);
    expect(ends[0]).toEqual({
      runId: "r1",
      status: "done",
      result: { reported: "Paris: sunny" },
      error: null,
    });
    expect(ends[1]?.error).toBe(error);
  });

  it("gives a ContextManager's compaction its measure, the object its onCompact got", async () => {
    const { workflow } = weatherWorkflow();
    const heard: CompactEvent[] = [];
    const contextManager = new ContextManager({
      strategy: new SlidingWindowCompact({ keepRecent: 1 }),
      budgetTokens: 120,
      onCompact: (event) => heard.push(event),
    });
    const measures: (CompactionMeasure | undefined)[] = [];
    const runner = new WorkflowRunner({ client: new ScriptedClient(WEATHER_SCRIPT), contextManager });
    await runner.run(workflow, "Weather?", {
      promptVars: { user: "Ada" },
      observers: [{ onCompaction: ({ measure }) => measures.push(measure) }],
    });
    expect(heard.length).toBeGreaterThan(0);
    expect(measures).toHaveLength(heard.length);
    for (const [index, measure] of measures.entries()) expect(measure).toBe(heard[index]);
    expect(measures[0]).toMatchObject({ budgetTokens: 120, phaseReached: expect.any(Number) });
  });

  it("tells runner-wide observers first, then the run's own, each everything", async () => {
    const { workflow } = weatherWorkflow();
    const order: string[] = [];
    const runnerWide = recorder();
    const own = recorder();
    const runner = new WorkflowRunner({
      client: new ScriptedClient(WEATHER_SCRIPT),
      contextManager: createPassthrough(),
      observers: [runnerWide.observer, { onLLMCallStart: () => order.push("runner") }],
    });
    await runner.run(workflow, "Weather?", {
      promptVars: { user: "Ada" },
      observers: [own.observer, { onLLMCallStart: () => order.push("run") }],
    });
    expect(runnerWide.lines).toEqual(WEATHER_LINES);
    expect(own.lines).toEqual(WEATHER_LINES);
    expect(order).toEqual(["runner", "run", "runner", "run"]);
  });

  it("keeps going when an observer throws or rejects, and logs each such observer once", async () => {
    const { workflow } = weatherWorkflow();
    const logged: string[] = [];
    const healthy = recorder();
    const throwing: RunObserver = {
      onState: () => {
        throw new Error("observer bug");
      },
      onLLMCallEnd: () => {
        throw new Error("observer bug again");
      },
    };
    const rejecting: RunObserver = {
      onMessage: () => Promise.reject(new Error("async observer bug")),
    } as never;
    const runner = new WorkflowRunner({
      client: new ScriptedClient(WEATHER_SCRIPT),
      contextManager: createPassthrough(),
      logger: (line) => logged.push(line),
    });
    const result = await runner.run(workflow, "Weather?", {
      promptVars: { user: "Ada" },
      observers: [throwing, rejecting, healthy.observer],
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(result).toEqual({ reported: "Paris: sunny" });
    expect(healthy.lines).toEqual(WEATHER_LINES);
    expect(logged).toHaveLength(2);
    expect(logged[0]).toMatch(/RunObserver's onState threw.*observer bug/s);
    expect(logged[1]).toMatch(/RunObserver's onMessage threw.*async observer bug/s);
  });

  it("costs nothing to leave out: a run without observers answers as before", async () => {
    const { workflow } = weatherWorkflow();
    const runner = new WorkflowRunner({
      client: new ScriptedClient(WEATHER_SCRIPT),
      contextManager: createPassthrough(),
    });
    await expect(runner.run(workflow, "Weather?", { promptVars: { user: "Ada" } })).resolves.toEqual({
      reported: "Paris: sunny",
    });
  });
});

describe("RunObserver on resume", () => {
  it("tells the resumed run's observers what happens after the checkpoint, once", async () => {
    const { workflow } = weatherWorkflow();
    const stored: { snapshot: unknown; meta: CheckpointMeta }[] = [];
    class Crash extends Error {}
    const first = new WorkflowRunner({
      client: new ScriptedClient([WEATHER_SCRIPT[0] as LLMResponse]),
      contextManager: createPassthrough(),
    });
    // The process "crashes" at the second LLM call's checkpoint, after the first step finished.
    await expect(
      first.run(workflow, "Weather?", {
        promptVars: { user: "Ada" },
        checkpoint: (snapshot, meta) => {
          stored.push(JSON.parse(JSON.stringify({ snapshot, meta })));
          if (meta.reason === "inference" && meta.iteration === 2) throw new Crash("crash");
        },
      }),
    ).rejects.toBeInstanceOf(Crash);

    const latest = stored.at(-1) as { snapshot: unknown; meta: CheckpointMeta };
    const client = new ScriptedClient([WEATHER_SCRIPT[1] as LLMResponse]);
    const second = new WorkflowRunner({ client, contextManager: createPassthrough() });
    const { lines, observer } = recorder();
    await expect(
      second.resume(workflow, latest.snapshot as never, { meta: latest.meta, observers: [observer] }),
    ).resolves.toEqual({ reported: "Paris: sunny" });
    client.assertDone();
    expect(lines).toEqual(WEATHER_LINES.slice(WEATHER_LINES.indexOf("llm.start@2")));
  });
});

describe("RunObserver on runInference", () => {
  it("tells the nudge, both LLM calls and the responded state", async () => {
    const client = new ScriptedClient([
      { content: "I think it is sunny" },
      toolCall("get_weather", { city: "Oslo" }),
    ]);
    const { lines, observer } = recorder();
    const { workflow } = weatherWorkflow();
    const tools = Object.values(workflow.tools).map((tool) => tool.spec);
    const result = await runInference({
      client,
      contextManager: createPassthrough(),
      messages: [{ role: "user", content: "Weather in Oslo?", metadata: { type: "user_input" } }],
      tools,
      observers: [observer],
    });
    expect(result.toolCalls).toEqual([{ tool: "get_weather", args: { city: "Oslo" } }]);
    expect(lines).toEqual([
      "state compact@0",
      "state infer@1",
      "llm.start@1",
      "llm.end@1",
      "state validate@1",
      "message text_response",
      "message retry_nudge",
      "state compact@1",
      "state infer@2",
      "llm.start@2",
      "llm.end@2",
      "state validate@2",
      "state responded@2",
    ]);
  });
});
