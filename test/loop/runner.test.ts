import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  MaxIterationsError,
  PrerequisiteError,
  StepEnforcementError,
  StreamError,
  ToolCallError,
  ToolExecutionError,
  ToolResolutionError,
  WorkflowCancelledError,
} from "../../src/core/errors.ts";
import { type Message, MessageType } from "../../src/core/messages.ts";
import { defineTool } from "../../src/core/tools.ts";
import { ChunkType, type LLMClient, type StreamChunk } from "../../src/core/types.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { hangUntilAborted, ScriptedClient, text, toolCall } from "../../src/testing/index.ts";
import { createPassthrough, rejectionOf, weatherWorkflow } from "../helpers/workflows.ts";

const vars = { promptVars: { user: "Ada" } };
const happy = () => [
  toolCall("get_weather", { city: "Paris" }),
  toolCall("report_weather", { city: "Paris", weather: "sunny" }),
];

function setup(
  script: ConstructorParameters<typeof ScriptedClient>[0],
  options: Partial<ConstructorParameters<typeof WorkflowRunner>[0]> = {},
) {
  const client = new ScriptedClient(script);
  const messages: Message[] = [];
  const compactor = createPassthrough();
  const runner = new WorkflowRunner({
    client,
    contextManager: compactor,
    onMessage: (m) => messages.push(m),
    ...options,
  });
  return { client, runner, messages, compactor };
}

const types = (messages: Message[]) => messages.map((m) => m.metadata.type);

describe("happy path", () => {
  it("runs to the terminal tool and resolves with its return value", async () => {
    const { workflow, executed } = weatherWorkflow();
    const { client, runner, messages } = setup(happy());
    await expect(runner.run(workflow, "Weather in Paris?", vars)).resolves.toEqual({
      reported: "Paris: sunny",
    });
    client.assertDone();
    expect(executed).toEqual(["get_weather:Paris", "report_weather:Paris"]);
    expect(types(messages)).toEqual([
      "system_prompt",
      "user_input",
      "tool_call",
      "tool_result",
      "tool_call",
      "tool_result",
    ]);
    expect(messages[0]?.content).toBe("You are a weather assistant for Ada.");
    expect(messages[3]?.content).toBe("22°C and sunny in Paris");
    expect(messages[3]?.toolCallId).toBe(messages[2]?.toolCalls?.[0]?.callId);
    expect(messages[2]?.toolCalls?.[0]?.callId).toMatch(/^[a-z0-9]{9}$/);
  });

  it("sends the tools and the serialized history on the client's wire format", async () => {
    const { workflow } = weatherWorkflow();
    const { client, runner } = setup(happy());
    await runner.run(workflow, "Weather in Paris?", vars);
    expect(client.calls[0]?.tools.map((tool) => tool.name)).toEqual(["get_weather", "report_weather"]);
    expect(client.calls[0]?.tools[0]?.parameters).toMatchObject({
      type: "object",
      properties: { city: { type: "string" } },
    });
    const second = client.calls[1]?.messages ?? [];
    expect(second[2]).toMatchObject({
      role: "assistant",
      tool_calls: [{ type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }],
    });
    expect(second[3]).toMatchObject({
      role: "tool",
      name: "get_weather",
      content: "22°C and sunny in Paris",
    });
    expect(second.every((message) => !("metadata" in message))).toBe(true);
  });
});

describe("rule 1: cancellation", () => {
  it("before start throws WorkflowCancelledError with iteration 0 and makes no call", async () => {
    const { workflow } = weatherWorkflow();
    const { client, runner } = setup(happy());
    const controller = new AbortController();
    controller.abort();
    const error = await rejectionOf(runner.run(workflow, "x", { ...vars, signal: controller.signal }));
    expect(error).toBeInstanceOf(WorkflowCancelledError);
    expect(error.iteration).toBe(0);
    expect(client.calls).toHaveLength(0);
  });

  it("mid-run (between iterations) keeps the full history and completed steps", async () => {
    const { workflow } = weatherWorkflow();
    const controller = new AbortController();
    const { runner } = setup([
      toolCall("get_weather", { city: "Paris" }),
      () => {
        controller.abort();
        return toolCall("report_weather", { city: "Paris", weather: "sunny" });
      },
    ]);
    const error = await rejectionOf(runner.run(workflow, "x", { ...vars, signal: controller.signal }));
    expect(error).toBeInstanceOf(WorkflowCancelledError);
    expect(error.completedSteps).toEqual(["get_weather"]);
    expect(error.iteration).toBe(2);
    expect(types(error.messages)).toEqual(["system_prompt", "user_input", "tool_call", "tool_result"]);
  });

  it("during an in-flight request aborts the request itself", async () => {
    const { workflow } = weatherWorkflow();
    const controller = new AbortController();
    const { client, runner } = setup([
      toolCall("get_weather", { city: "Paris" }),
      hangUntilAborted(() => setTimeout(() => controller.abort(), 5)),
    ]);
    const error = await rejectionOf(runner.run(workflow, "x", { ...vars, signal: controller.signal }));
    expect(error).toBeInstanceOf(WorkflowCancelledError);
    expect(client.calls[1]?.signal?.aborted).toBe(true);
    expect(error.iteration).toBe(2);
    expect(error.messages).toHaveLength(4);
  });

  // cancelGraceMs 0: the call in flight is not waited for (cancel-grace.test.ts covers the wait).
  it("during tool execution answers the interrupted calls so the history stays paired", async () => {
    const controller = new AbortController();
    const slow = defineTool({
      name: "slow",
      description: "slow tool",
      parameters: z.object({}),
      execute: () => new Promise((resolve) => setTimeout(() => resolve("late"), 50)),
    });
    const done = defineTool({ name: "done", description: "", parameters: z.object({}), execute: () => "ok" });
    const workflow = defineWorkflow({
      name: "w",
      description: "",
      tools: [slow, done],
      terminalTool: "done",
      systemPrompt: "s",
    });
    const { runner } = setup(
      [
        () => {
          setTimeout(() => controller.abort(), 5);
          return toolCall("slow");
        },
      ],
      { cancelGraceMs: 0 },
    );
    const error = await rejectionOf(runner.run(workflow, "x", { signal: controller.signal }));
    expect(error).toBeInstanceOf(WorkflowCancelledError);
    const last = error.messages.at(-1) as Message;
    expect(last.content).toContain("[Cancelled]");
    expect(last.toolCallId).toBe(error.messages.at(-2).toolCalls[0].callId);
  });
});

describe("rule 2: compaction once per iteration, before inference", () => {
  it("calls maybeCompact with the 0-based iteration and the step hint", async () => {
    const { workflow } = weatherWorkflow();
    const { runner, compactor } = setup(happy());
    await runner.run(workflow, "x", vars);
    expect(compactor.calls.map((call) => call.stepIndex)).toEqual([0, 1]);
    expect(compactor.calls[0]?.stepHint).toBe("[No steps completed yet]");
    expect(compactor.calls[1]?.stepHint).toBe("[Steps completed: get_weather]");
  });

  it("sends the compacted history", async () => {
    const { workflow } = weatherWorkflow();
    const client = new ScriptedClient(happy());
    const runner = new WorkflowRunner({
      client,
      contextManager: {
        maybeCompact: (messages) => messages.filter((m) => m.metadata.type !== MessageType.TOOL_RESULT),
      },
    });
    await runner.run(workflow, "x", vars);
    expect(client.calls[1]?.messages.some((m) => m.role === "tool")).toBe(false);
  });
});

describe("rule 3: send, folding and streaming", () => {
  it("folds reasoning into the tool-call message on the wire but keeps it apart in history", async () => {
    const { workflow } = weatherWorkflow();
    const { client, runner, messages } = setup([
      toolCall("get_weather", { city: "Paris" }, "The user wants Paris."),
      toolCall("report_weather", { city: "Paris", weather: "sunny" }),
    ]);
    await runner.run(workflow, "x", vars);
    expect(types(messages).slice(2, 4)).toEqual(["reasoning", "tool_call"]);
    expect(messages[2]?.content).toBe("The user wants Paris.");
    const wire = client.calls[1]?.messages ?? [];
    expect(wire).toHaveLength(4);
    expect(wire[2]).toMatchObject({
      role: "assistant",
      content: "The user wants Paris.",
      tool_calls: [{ function: { name: "get_weather" } }],
    });
  });

  it("streams through sendStream and awaits onChunk for every chunk", async () => {
    const { workflow } = weatherWorkflow();
    const seen: string[] = [];
    const { client, runner } = setup(happy(), {
      stream: true,
      onChunk: async (chunk) => {
        await new Promise((resolve) => setTimeout(resolve, 1));
        seen.push(chunk.type);
      },
    });
    await runner.run(workflow, "x", vars);
    expect(client.calls.every((call) => call.streamed)).toBe(true);
    expect(seen).toEqual(["tool_call_delta", "final", "tool_call_delta", "final"]);
  });

  it("throws StreamError when no FINAL chunk arrives", async () => {
    const { workflow } = weatherWorkflow();
    const client: LLMClient = {
      apiFormat: "openai",
      send: async () => ({ content: "" }),
      async *sendStream(): AsyncIterable<StreamChunk> {
        yield { type: ChunkType.TEXT_DELTA, content: "partial" };
      },
      getContextLength: async () => null,
    };
    const runner = new WorkflowRunner({ client, contextManager: createPassthrough(), stream: true });
    const error = await rejectionOf(runner.run(workflow, "x", vars));
    expect(error).toBeInstanceOf(StreamError);
    expect(error.message).toContain("FINAL chunk");
  });
});

describe("rule 4: validation, rescue and retries", () => {
  it("rescues a tool call from text", async () => {
    const { workflow } = weatherWorkflow();
    const { runner, messages } = setup([
      text('Sure! <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'),
      toolCall("report_weather", { city: "Paris", weather: "sunny" }),
    ]);
    await runner.run(workflow, "x", vars);
    expect(types(messages)).not.toContain("retry_nudge");
  });

  it("does not rescue when rescue is disabled: text + retry nudge on the user channel", async () => {
    const { workflow } = weatherWorkflow();
    const { runner, messages } = setup(
      [text('{"tool": "get_weather", "args": {"city": "Paris"}}'), ...happy()],
      { rescueEnabled: false },
    );
    await runner.run(workflow, "x", vars);
    expect(types(messages).slice(2, 4)).toEqual(["text_response", "retry_nudge"]);
    expect(messages[2]).toMatchObject({
      role: "assistant",
      content: '{"tool": "get_weather", "args": {"city": "Paris"}}',
    });
    expect(messages[3]?.role).toBe("user");
    expect(messages[3]?.content).toContain("not a valid tool call");
  });

  it("does not rescue a call naming an unknown tool", async () => {
    const { workflow } = weatherWorkflow();
    const { runner, messages } = setup([
      text('{"tool": "get_forecast", "args": {"city": "Paris"}}'),
      ...happy(),
    ]);
    await runner.run(workflow, "x", vars);
    expect(types(messages)[3]).toBe("retry_nudge");
    expect(messages[3]?.content).toContain("not a valid tool call");
    expect(messages[3]?.content).toContain("'get_forecast' is not an available tool");
    expect(messages[3]?.content).toContain("Available tools: get_weather, report_weather.");
  });

  it("uses a custom retryNudge string or function", async () => {
    const { workflow } = weatherWorkflow();
    const fixed = setup([text("hmm"), ...happy()], { retryNudge: "CALL A TOOL" });
    await fixed.runner.run(workflow, "x", vars);
    expect(fixed.messages[3]?.content).toBe("CALL A TOOL");
    const computed = setup([text("hmm"), ...happy()], { retryNudge: (raw) => `You said ${raw}` });
    await computed.runner.run(workflow, "x", vars);
    expect(computed.messages[3]?.content).toBe("You said hmm");
  });

  it("rejects a whole batch with an unknown tool: every call id gets a tool reply", async () => {
    const { workflow, executed } = weatherWorkflow();
    const { runner, messages } = setup([
      [
        { tool: "get_weather", args: { city: "Paris" } },
        { tool: "get_forecast", args: { city: "Paris" } },
      ],
      ...happy(),
    ]);
    await runner.run(workflow, "x", vars);
    const [call, first, second] = messages.slice(2, 5);
    expect(call?.metadata.type).toBe("tool_call");
    expect(second).toMatchObject({
      role: "tool",
      metadata: { type: "retry_nudge" },
      toolCallId: call?.toolCalls?.[1]?.callId,
    });
    expect(second?.content.startsWith("[UnknownTool]")).toBe(true);
    expect(second?.content).toContain("does not exist");
    expect(second?.content).toContain("get_forecast");
    expect(second?.content).toContain("get_weather, report_weather");
    expect(first).toMatchObject({ role: "tool", toolCallId: call?.toolCalls?.[0]?.callId });
    expect(first?.content).toContain("not run");
    expect(executed).toEqual(["get_weather:Paris", "report_weather:Paris"]);
  });

  it("shares one consecutive counter between text and unknown tools; the failure after maxRetries nudges throws", async () => {
    const { workflow } = weatherWorkflow();
    const { client, runner, messages } = setup([text("a"), toolCall("nope"), text("b"), text("last words")], {
      maxRetriesPerStep: 3,
    });
    const error = await rejectionOf(runner.run(workflow, "x", vars));
    expect(error).toBeInstanceOf(ToolCallError);
    expect(error.message).toContain("Retries exhausted");
    expect(error.rawResponse).toBe("last words");
    expect(client.calls).toHaveLength(4);
    expect(messages.filter((m) => m.metadata.type === "retry_nudge")).toHaveLength(3);
    expect(error.messages.length).toBeGreaterThan(2);
  });

  it("resets the retry counter on any known tool call", async () => {
    const { workflow } = weatherWorkflow();
    const { runner } = setup(
      [
        text("a"),
        text("b"),
        toolCall("get_weather", { city: "Paris" }),
        text("c"),
        text("d"),
        toolCall("report_weather", { city: "P", weather: "w" }),
      ],
      { maxRetriesPerStep: 2 },
    );
    await expect(runner.run(workflow, "x", vars)).resolves.toBeDefined();
  });

  it("with maxRetriesPerStep 0 the first failure throws", async () => {
    const { workflow } = weatherWorkflow();
    const { runner } = setup([text("a")], { maxRetriesPerStep: 0 });
    await expect(runner.run(workflow, "x", vars)).rejects.toBeInstanceOf(ToolCallError);
  });
});

describe("rule 5: step enforcement and prerequisites", () => {
  it("escalates premature terminal nudges over three tiers, then throws StepEnforcementError", async () => {
    const { workflow } = weatherWorkflow();
    const premature = () => toolCall("report_weather", { city: "Paris", weather: "?" });
    const { runner, messages } = setup([premature(), premature(), premature(), premature()]);
    const error = await rejectionOf(runner.run(workflow, "x", vars));
    expect(error).toBeInstanceOf(StepEnforcementError);
    expect(error).toMatchObject({
      terminalTool: "report_weather",
      attempts: 4,
      pendingSteps: ["get_weather"],
    });
    const nudges = messages.filter((m) => m.metadata.type === "step_nudge");
    expect(nudges.map((n) => n.role)).toEqual(["tool", "tool", "tool"]);
    expect(nudges.every((n) => n.content.startsWith("[StepEnforcementError]"))).toBe(true);
    expect(nudges[0]?.content).toContain("cannot call report_weather yet");
    expect(nudges[1]?.content).toContain("must call one of these tools now");
    expect(nudges[2]?.content).toContain("STOP");
  });

  it("a clean batch resets the premature counter", async () => {
    const { workflow } = weatherWorkflow();
    const premature = () => toolCall("report_weather", { city: "Paris", weather: "?" });
    const lookup = () => toolCall("get_weather", { city: "Paris" });
    const { runner, messages } = setup([
      premature(),
      premature(),
      premature(),
      lookup(),
      ...happy().slice(1),
    ]);
    await expect(runner.run(workflow, "x", vars)).resolves.toBeDefined();
    expect(messages.filter((m) => m.metadata.type === "step_nudge")).toHaveLength(3);
  });

  function prereqWorkflow() {
    const executed: string[] = [];
    const read = defineTool({
      name: "read_file",
      description: "",
      parameters: z.object({ path: z.string() }),
      execute: ({ path }) => {
        executed.push(`read:${path}`);
        return "contents";
      },
    });
    const edit = defineTool({
      name: "edit_file",
      description: "",
      parameters: z.object({ path: z.string() }),
      prerequisites: [{ tool: "read_file", matchArg: "path" }],
      execute: ({ path }) => {
        executed.push(`edit:${path}`);
        return "edited";
      },
    });
    const list = defineTool({
      name: "list",
      description: "",
      parameters: z.object({}),
      prerequisites: ["read_file"],
      execute: () => "a.txt",
    });
    const finish = defineTool({
      name: "finish",
      description: "",
      parameters: z.object({}),
      execute: () => "done",
    });
    const workflow = defineWorkflow({
      name: "files",
      description: "",
      tools: [read, edit, list, finish],
      terminalTool: "finish",
      systemPrompt: "s",
    });
    return { workflow, executed };
  }

  it("blocks the whole batch on an arg-matched prerequisite checked against the state before the batch", async () => {
    const { workflow, executed } = prereqWorkflow();
    const { runner, messages } = setup([
      [
        { tool: "read_file", args: { path: "a.txt" } },
        { tool: "edit_file", args: { path: "a.txt" } },
      ],
      toolCall("read_file", { path: "b.txt" }),
      toolCall("edit_file", { path: "b.txt" }),
      toolCall("finish"),
    ]);
    await runner.run(workflow, "x");
    const nudges = messages.filter((m) => m.metadata.type === "prerequisite_nudge");
    expect(nudges).toHaveLength(2);
    expect(nudges.every((n) => n.role === "tool" && n.content.startsWith("[PrereqError]"))).toBe(true);
    expect(nudges[1]?.content).toContain("read_file");
    expect(executed).toEqual(["read:b.txt", "edit:b.txt"]);
  });

  it("throws PrerequisiteError on the third consecutive violation (default 2)", async () => {
    const { workflow } = prereqWorkflow();
    const { runner } = setup([toolCall("list"), toolCall("list"), toolCall("list")]);
    const error = await rejectionOf(runner.run(workflow, "x"));
    expect(error).toBeInstanceOf(PrerequisiteError);
    expect(error).toMatchObject({ toolName: "list", violations: 3, missingPrereqs: ["read_file"] });
  });

  it("does not enforce steps when stepEnforcement is off (ablation)", async () => {
    const { workflow } = weatherWorkflow();
    const { runner } = setup([toolCall("report_weather", { city: "P", weather: "w" })], {
      stepEnforcement: false,
    });
    await expect(runner.run(workflow, "x", vars)).resolves.toEqual({ reported: "P: w" });
  });
});

describe("rule 6: execution", () => {
  it("executes every call of a batch in order: one TOOL_CALL, then one TOOL_RESULT per call", async () => {
    const { workflow, executed } = weatherWorkflow();
    const { runner, messages } = setup([
      [
        { tool: "get_weather", args: { city: "Paris" } },
        { tool: "get_weather", args: { city: "Oslo" } },
      ],
      toolCall("report_weather", { city: "Paris", weather: "sunny" }),
    ]);
    await runner.run(workflow, "x", vars);
    expect(types(messages).slice(2, 5)).toEqual(["tool_call", "tool_result", "tool_result"]);
    expect(executed.slice(0, 2)).toEqual(["get_weather:Paris", "get_weather:Oslo"]);
  });

  it("feeds a zod argument failure back as a ToolArgumentError tool error", async () => {
    const { workflow, executed } = weatherWorkflow();
    const { runner, messages } = setup([toolCall("get_weather", { city: 42 }), ...happy()]);
    await runner.run(workflow, "x", vars);
    expect(messages[3]?.content).toMatch(/^\[ToolError\] ToolArgumentError: city: /);
    expect(executed[0]).toBe("get_weather:Paris");
  });

  it("passes the parsed value to the tool (zod defaults applied)", async () => {
    let received: unknown;
    const tool = defineTool({
      name: "t",
      description: "",
      parameters: z.object({ n: z.number().default(5) }),
      execute: (args) => {
        received = args;
        return "ok";
      },
    });
    const workflow = defineWorkflow({
      name: "w",
      description: "",
      tools: [tool],
      terminalTool: "t",
      systemPrompt: "s",
    });
    const { runner } = setup([toolCall("t", {})]);
    await runner.run(workflow, "x");
    expect(received).toEqual({ n: 5 });
  });

  it("ToolResolutionError is fed back without recording the step or counting an error", async () => {
    let misses = 3;
    const find = defineTool({
      name: "find",
      description: "",
      parameters: z.object({ id: z.number() }),
      execute: ({ id }) => {
        if (misses-- > 0) throw new ToolResolutionError(`no record ${id}`);
        return "found";
      },
    });
    const finish = defineTool({
      name: "finish",
      description: "",
      parameters: z.object({}),
      execute: () => "done",
    });
    const workflow = defineWorkflow({
      name: "w",
      description: "",
      tools: [find, finish],
      requiredSteps: ["find"],
      terminalTool: "finish",
      systemPrompt: "s",
    });
    const { runner, messages } = setup(
      [
        toolCall("find", { id: 1 }),
        toolCall("find", { id: 2 }),
        toolCall("finish"),
        toolCall("find", { id: 3 }),
        toolCall("find", { id: 4 }),
        toolCall("finish"),
      ],
      { maxToolErrors: 0 },
    );
    await expect(runner.run(workflow, "x")).resolves.toBe("done");
    expect(messages[3]?.content).toBe("[ToolResolutionError] no record 1");
    expect(messages.filter((m) => m.metadata.type === "step_nudge")).toHaveLength(1);
  });

  it("feeds other errors back as [ToolError] Name: message and throws on the third consecutive failing batch", async () => {
    const { workflow } = weatherWorkflow({ failWeather: 10 });
    const lookup = () => toolCall("get_weather", { city: "Paris" });
    const { runner, messages } = setup([lookup(), lookup(), lookup()]);
    const error = await rejectionOf(runner.run(workflow, "x", vars));
    expect(error).toBeInstanceOf(ToolExecutionError);
    expect(error.toolName).toBe("get_weather");
    expect(error.cause).toMatchObject({ name: "TypeError", message: "weather service unavailable" });
    expect(messages.at(-1)?.content).toBe("[ToolError] TypeError: weather service unavailable");
    expect(messages.filter((m) => m.metadata.type === "tool_result")).toHaveLength(3);
  });

  it("a clean batch resets the tool-error counter", async () => {
    const { workflow } = weatherWorkflow({ failWeather: 2 });
    const lookup = () => toolCall("get_weather", { city: "Paris" });
    const { runner } = setup(
      [lookup(), lookup(), lookup(), lookup(), toolCall("report_weather", { city: "P", weather: "w" })],
      { maxToolErrors: 2 },
    );
    await expect(runner.run(workflow, "x", vars)).resolves.toBeDefined();
  });
});

describe("rule 7: termination", () => {
  it("throws MaxIterationsError after maxIterations LLM calls", async () => {
    const { workflow } = weatherWorkflow();
    const lookup = () => toolCall("get_weather", { city: "Paris" });
    const { client, runner } = setup([lookup(), lookup(), lookup()], { maxIterations: 3 });
    const error = await rejectionOf(runner.run(workflow, "x", vars));
    expect(error).toBeInstanceOf(MaxIterationsError);
    expect(error).toMatchObject({ iterations: 3, completedSteps: ["get_weather"], pendingSteps: [] });
    expect(client.calls).toHaveLength(3);
  });

  it("retries count as iterations", async () => {
    const { workflow } = weatherWorkflow();
    const { runner } = setup([text("a"), text("b")], { maxIterations: 2 });
    await expect(runner.run(workflow, "x", vars)).rejects.toBeInstanceOf(MaxIterationsError);
  });

  it("a failing terminal tool does not end the run", async () => {
    let fail = true;
    const finish = defineTool({
      name: "finish",
      description: "",
      parameters: z.object({}),
      execute: () => {
        if (fail) {
          fail = false;
          throw new Error("disk full");
        }
        return "saved";
      },
    });
    const workflow = defineWorkflow({
      name: "w",
      description: "",
      tools: [finish],
      terminalTool: "finish",
      systemPrompt: "s",
    });
    const { runner } = setup([toolCall("finish"), toolCall("finish")]);
    await expect(runner.run(workflow, "x")).resolves.toBe("saved");
  });

  it("supports several terminal tools", async () => {
    const a = defineTool({ name: "a", description: "", parameters: z.object({}), execute: () => "A" });
    const b = defineTool({ name: "b", description: "", parameters: z.object({}), execute: () => "B" });
    const workflow = defineWorkflow({
      name: "w",
      description: "",
      tools: [a, b],
      terminalTool: ["a", "b"],
      systemPrompt: "s",
    });
    const { runner } = setup([toolCall("b")]);
    await expect(runner.run(workflow, "x")).resolves.toBe("B");
  });
});

describe("onMessage and multi-turn", () => {
  it("with initialMessages builds no system prompt and reports only new messages", async () => {
    const { workflow } = weatherWorkflow();
    const first = setup(happy());
    await first.runner.run(workflow, "Weather in Paris?", vars);
    const seed = [
      ...first.messages,
      { role: "user" as const, content: "And Oslo?", metadata: { type: MessageType.USER_INPUT } },
    ];
    const second = setup([
      toolCall("get_weather", { city: "Oslo" }),
      toolCall("report_weather", { city: "Oslo", weather: "snow" }),
    ]);
    await expect(second.runner.run(workflow, "And Oslo?", { initialMessages: seed })).resolves.toEqual({
      reported: "Oslo: snow",
    });
    expect(second.messages.map((m) => m.metadata.type)).toEqual([
      "tool_call",
      "tool_result",
      "tool_call",
      "tool_result",
    ]);
    expect(second.client.calls[0]?.messages).toHaveLength(seed.length);
    expect(second.client.calls[0]?.messages.at(-1)).toEqual({ role: "user", content: "And Oslo?" });
    const ids = [...first.messages, ...second.messages].flatMap(
      (m) => m.toolCalls?.map((c) => c.callId) ?? [],
    );
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("reports messages in append order, matching the final history", async () => {
    const { workflow } = weatherWorkflow();
    const { runner, messages } = setup([
      text("hmm"),
      toolCall("report_weather", { city: "P", weather: "w" }),
      ...happy(),
    ]);
    await runner.run(workflow, "x", vars);
    expect(types(messages)).toEqual([
      "system_prompt",
      "user_input",
      "text_response",
      "retry_nudge",
      "tool_call",
      "step_nudge",
      "tool_call",
      "tool_result",
      "tool_call",
      "tool_result",
    ]);
  });
});
