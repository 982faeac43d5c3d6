import { describe, expect, it } from "vitest";
import { z } from "zod";
import * as errors from "../../src/core/errors.ts";
import {
  ForgeError,
  InvalidResponseError,
  PromptTemplateError,
  ToolOutputError,
  ToolResolutionError,
  WorkflowDefinitionError,
} from "../../src/core/errors.ts";
import { durableMessages, isTransientMessage, type Message, toApiMessage } from "../../src/core/messages.ts";
import { defineTool, toolJsonSchema, toolSpecFromJsonSchema } from "../../src/core/tools.ts";
import type { LLMClient } from "../../src/core/types.ts";
import { defineWorkflow, renderSystemPrompt } from "../../src/core/workflow.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import { respondTool } from "../../src/tools/respond.ts";
import { createPassthrough, rejectionOf } from "../helpers/workflows.ts";

const noop = defineTool({ name: "noop", description: "d", parameters: z.object({}), execute: () => "ok" });
const done = defineTool({
  name: "done",
  description: "d",
  parameters: z.object({}),
  execute: () => "finished",
});

const invalidTools: [unknown, string][] = [
  [{ name: "bad name!", description: "", parameters: z.object({}), execute: () => 1 }, "Invalid tool name"],
  [{ name: "t", description: "", parameters: z.string(), execute: () => 1 }, "zod object schema"],
  [{ name: "t", description: "", parameters: z.object({}), execute: "nope" }, "execute must be a function"],
  [
    {
      name: "t",
      description: "",
      parameters: z.object({}),
      execute: () => 1,
      prerequisites: [{ tool: "x" }],
    },
    "invalid prerequisite",
  ],
];

describe("defineTool", () => {
  it.each(invalidTools)("rejects %#", (options, message) => {
    expect(() => defineTool(options as never)).toThrow(WorkflowDefinitionError);
    expect(() => defineTool(options as never)).toThrow(message);
  });

  it("exposes the parameters as JSON Schema without $schema", () => {
    const tool = defineTool({
      name: "get_weather",
      description: "Weather",
      parameters: z.object({ city: z.string().describe("City name"), days: z.number().int().optional() }),
      execute: () => "",
    });
    expect(toolJsonSchema(tool.spec)).toEqual({
      type: "object",
      properties: {
        city: { type: "string", description: "City name" },
        days: { type: "integer", minimum: expect.any(Number), maximum: expect.any(Number) },
      },
      required: ["city"],
    });
  });
});

describe("defineTool with a JSON Schema", () => {
  const schema = {
    type: "object",
    properties: { city: { type: "string", minLength: 2 } },
    required: ["city"],
  };

  it("sends the schema as-is and validates with its zod conversion", async () => {
    const tool = defineTool({
      ...toolSpecFromJsonSchema("get_weather", "Weather", schema),
      timeoutMs: 5_000,
      execute: ({ city }) => `sunny in ${String(city)}`,
    });
    expect(toolJsonSchema(tool.spec)).toEqual({ ...schema, type: "object" });
    expect(tool.spec.parameters.safeParse({ city: "P" }).success).toBe(false);
    expect(tool.timeoutMs).toBe(5_000);
    expect(await tool.execute({ city: "Paris" })).toBe("sunny in Paris");
  });

  it("rejects a jsonSchema that is not an object", () => {
    const options = {
      name: "t",
      description: "",
      parameters: z.object({}),
      jsonSchema: [],
      execute: () => 1,
    };
    expect(() => defineTool(options as never)).toThrow(WorkflowDefinitionError);
    expect(() => defineTool(options as never)).toThrow("jsonSchema must be a JSON Schema object");
  });
});

describe("toolSpecFromJsonSchema", () => {
  it("converts JSON Schema to zod for validation and keeps it for the wire", () => {
    const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
    const spec = toolSpecFromJsonSchema("get_weather", "Weather", schema);
    expect(spec.parameters.safeParse({ city: "Paris" }).success).toBe(true);
    expect(spec.parameters.safeParse({ city: 3 }).success).toBe(false);
    expect(spec.parameters.safeParse({}).success).toBe(false);
    expect(toolJsonSchema(spec)).toMatchObject(schema);
  });

  it("rejects schemas that are not objects", () => {
    expect(() => toolSpecFromJsonSchema("t", "", { type: "string" })).toThrow(/type "object"/);
    expect(() => toolSpecFromJsonSchema("t", "", null as never)).toThrow(WorkflowDefinitionError);
  });
});

describe("defineWorkflow", () => {
  const base = { name: "w", description: "", systemPrompt: "s" };
  it.each([
    [
      { tools: { other: noop, done }, terminalTool: "done" },
      "key 'other' differs from its tool's name 'noop'",
    ],
    [{ tools: [noop, done], requiredSteps: ["missing"], terminalTool: "done" }, "required step 'missing'"],
    [{ tools: [noop, done], terminalTool: "missing" }, "terminal tool 'missing'"],
    [{ tools: [noop, done], requiredSteps: ["done"], terminalTool: "done" }, "also a required step"],
    [
      {
        tools: [
          noop,
          done,
          defineTool({
            name: "p",
            description: "",
            parameters: z.object({}),
            execute: () => 1,
            prerequisites: ["ghost"],
          }),
        ],
        terminalTool: "done",
      },
      "prerequisite 'ghost'",
    ],
    [{ tools: [], terminalTool: "done" }, "at least one tool"],
    [{ tools: [noop, noop], terminalTool: "noop" }, "defined twice"],
    [{ tools: [noop, done], terminalTool: [] }, "at least one tool"],
  ])("rejects invalid definition %#", (options, message) => {
    expect(() => defineWorkflow({ ...base, ...options } as never)).toThrow(WorkflowDefinitionError);
    expect(() => defineWorkflow({ ...base, ...options } as never)).toThrow(message);
  });

  it("accepts a record keyed by name and several terminal tools", () => {
    const workflow = defineWorkflow({ ...base, tools: { noop, done }, terminalTool: ["noop", "done"] });
    expect(workflow.terminalTools).toEqual(["noop", "done"]);
  });
});

describe("renderSystemPrompt", () => {
  it("fills placeholders and keeps escaped and JSON braces", () => {
    expect(renderSystemPrompt('Hi {name}. Reply as {{"tool": ...}} or {"a": 1}.', { name: "Ada" })).toBe(
      'Hi Ada. Reply as {"tool": ...} or {"a": 1}.',
    );
  });
  it("names a placeholder without a value", () => {
    expect(() => renderSystemPrompt("Hi {name} from {city}", { name: "Ada" })).toThrow(PromptTemplateError);
    expect(() => renderSystemPrompt("Hi {name} from {city}", { name: "Ada" })).toThrow("{city}");
  });
  it("names a promptVars key the template does not use", () => {
    expect(() => renderSystemPrompt("Hi {name}", { name: "Ada", nmae: "x" })).toThrow("'nmae'");
  });
});

describe("toApiMessage", () => {
  const call: Message = {
    role: "assistant",
    content: "",
    metadata: { type: "tool_call", stepIndex: 0 },
    toolCalls: [{ name: "get_weather", args: { city: "Paris" }, callId: "abc123def" }],
  };
  const result: Message = {
    role: "tool",
    content: "sunny",
    metadata: { type: "tool_result" },
    toolName: "get_weather",
    toolCallId: "abc123def",
  };
  it("openai: JSON-string arguments, ids, tool_call_id and name", () => {
    expect(toApiMessage(call, "openai")).toEqual({
      role: "assistant",
      content: "",
      tool_calls: [
        {
          id: "abc123def",
          type: "function",
          function: { name: "get_weather", arguments: '{"city":"Paris"}' },
        },
      ],
    });
    expect(toApiMessage(result, "openai")).toEqual({
      role: "tool",
      content: "sunny",
      tool_call_id: "abc123def",
      name: "get_weather",
    });
  });
  it("ollama: object arguments and tool_name", () => {
    expect(toApiMessage(call, "ollama")).toEqual({
      role: "assistant",
      content: "",
      tool_calls: [{ function: { name: "get_weather", arguments: { city: "Paris" } } }],
    });
    expect(toApiMessage(result, "ollama")).toEqual({
      role: "tool",
      content: "sunny",
      tool_name: "get_weather",
    });
  });
});

describe("transient messages", () => {
  it("drops nudges, failed text and blocked batches but keeps executed calls paired", () => {
    const history: Message[] = [
      { role: "system", content: "s", metadata: { type: "system_prompt" } },
      { role: "user", content: "u", metadata: { type: "user_input" } },
      { role: "assistant", content: "prose", metadata: { type: "text_response", stepIndex: 0 } },
      { role: "user", content: "nudge", metadata: { type: "retry_nudge", stepIndex: 0 } },
      {
        role: "assistant",
        content: "",
        metadata: { type: "tool_call", stepIndex: 1 },
        toolCalls: [{ name: "done", args: {}, callId: "a" }],
      },
      {
        role: "tool",
        content: "[StepEnforcementError] …",
        metadata: { type: "step_nudge", stepIndex: 1 },
        toolCallId: "a",
      },
      {
        role: "assistant",
        content: "",
        metadata: { type: "tool_call", stepIndex: 2 },
        toolCalls: [{ name: "noop", args: {}, callId: "b" }],
      },
      { role: "tool", content: "ok", metadata: { type: "tool_result", stepIndex: 2 }, toolCallId: "b" },
    ];
    expect(durableMessages(history).map((m) => m.content)).toEqual(["s", "u", "", "ok"]);
    expect(durableMessages(history)[2]?.toolCalls?.[0]?.callId).toBe("b");
    expect(isTransientMessage(history[2] as Message, { keepText: true })).toBe(false);
  });
});

describe("errors", () => {
  it("every error's name equals its class name; ToolResolutionError is not a ForgeError", () => {
    const instances: Error[] = [
      new errors.ForgeError("x"),
      new errors.ToolCallError("x", "raw"),
      new errors.ToolExecutionError("t", new Error("x")),
      new errors.MaxIterationsError(3, [], []),
      new errors.StepEnforcementError("t", 4, ["a"]),
      new errors.PrerequisiteError("t", 3, ["a"]),
      new errors.WorkflowCancelledError([], [], 0),
      new errors.WorkflowDefinitionError("x"),
      new errors.PromptTemplateError("x"),
      new errors.InvalidResponseError(1),
      new errors.ToolOutputError("t", "x"),
      new errors.ContextBudgetExceeded(10, 5),
      new errors.BudgetResolutionError("x"),
      new errors.HardwareDetectionError("x"),
      new errors.ContextDiscoveryError("x"),
      new errors.BackendError(500, "body"),
      new errors.ThinkingNotSupportedError("m"),
      new errors.StreamError(),
      new errors.UnsupportedModelError("m"),
      new errors.ToolResolutionError("x"),
    ];
    for (const error of instances) expect(error.name).toBe(error.constructor.name);
    expect(new errors.ThinkingNotSupportedError("m")).toBeInstanceOf(errors.BackendError);
    expect(new ToolResolutionError("x")).not.toBeInstanceOf(ForgeError);
  });
});

function circular(): unknown {
  const value: Record<string, unknown> = {};
  value.self = value;
  return value;
}

describe("bad runtime input", () => {
  const workflow = defineWorkflow({
    name: "w",
    description: "",
    tools: [noop, done],
    terminalTool: "done",
    systemPrompt: "s",
  });

  it("a client returning neither a call list nor text → InvalidResponseError", async () => {
    const client: LLMClient = {
      apiFormat: "openai",
      send: async () => ({ text: "wrong shape" }) as never,
      sendStream: async function* () {},
      getContextLength: async () => null,
    };
    const error = await rejectionOf(
      new WorkflowRunner({ client, contextManager: createPassthrough() }).run(workflow, "x"),
    );
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error.message).toContain('{"text":"wrong shape"}');
  });

  it.each([
    [(): unknown => 10n, "bigint"],
    [(): unknown => new Map([["a", 1]]), "Map instance"],
    [circular, "circular"],
    [(): unknown => ({ f: () => 1 }), "function"],
    [(): unknown => Number.NaN, "NaN"],
  ])("a tool returning a non-serializable value → ToolOutputError (%#)", async (execute, reason) => {
    const bad = defineTool({ name: "bad", description: "", parameters: z.object({}), execute });
    const w = defineWorkflow({
      name: "w",
      description: "",
      tools: [bad, done],
      terminalTool: "done",
      systemPrompt: "s",
    });
    const runner = new WorkflowRunner({
      client: new ScriptedClient([toolCall("bad")]),
      contextManager: createPassthrough(),
    });
    const error = await rejectionOf(runner.run(w, "x"));
    expect(error).toBeInstanceOf(ToolOutputError);
    expect(error.toolName).toBe("bad");
    expect(error.message).toContain(reason);
  });

  it("a promptVars key missing from the template → PromptTemplateError before any call", async () => {
    const client = new ScriptedClient([]);
    const runner = new WorkflowRunner({ client, contextManager: createPassthrough() });
    await expect(runner.run(workflow, "x", { promptVars: { unused: "1" } })).rejects.toBeInstanceOf(
      PromptTemplateError,
    );
    expect(client.calls).toHaveLength(0);
  });

  it("rejects invalid runner limits", () => {
    const client = new ScriptedClient([]);
    expect(
      () => new WorkflowRunner({ client, contextManager: createPassthrough(), maxIterations: 0 }),
    ).toThrow(RangeError);
    expect(
      () => new WorkflowRunner({ client, contextManager: createPassthrough(), maxRetriesPerStep: -1 }),
    ).toThrow("maxRetriesPerStep");
  });
});

describe("respondTool", () => {
  it("is a tool named respond whose execute returns the message", async () => {
    const tool = respondTool();
    expect(tool.spec.name).toBe("respond");
    expect(toolJsonSchema(tool.spec)).toMatchObject({
      properties: { message: { type: "string" } },
      required: ["message"],
    });
    expect(await tool.execute({ message: "hello" })).toBe("hello");
  });
});
