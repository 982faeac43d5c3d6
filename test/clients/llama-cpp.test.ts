import { availableParallelism } from "node:os";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { LlamaCppClient, ModelNotFoundError } from "../../src/clients/llama-cpp/client.ts";
import { toChatHistory } from "../../src/clients/llama-cpp/history.ts";
import {
  callsPerAnswer,
  DEFAULT_MAX_TOKENS,
  endsRepeating,
  REPEAT_TIMES,
} from "../../src/clients/llama-cpp/limits.ts";
import { toLLMResponse } from "../../src/clients/llama-cpp/response.ts";
import {
  dropOmittedOptionals,
  toChatModelFunctions,
  toGbnfSchema,
} from "../../src/clients/llama-cpp/schema.ts";
import { describeFunctions, forceFunctionCall } from "../../src/clients/llama-cpp/wrapper.ts";
import { ContextManager } from "../../src/context/context-manager.ts";
import { TieredCompact } from "../../src/context/tiered-compact.ts";
import { BackendError, ForgeError, UnsupportedModelError } from "../../src/core/errors.ts";
import { MessageType } from "../../src/core/messages.ts";
import { defineTool, type ToolSpec, toolJsonSchema } from "../../src/core/tools.ts";
import { ChunkType, type LLMResponse, type StreamChunk, type ToolCall } from "../../src/core/types.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { ensureTestModel } from "../helpers/test-model.ts";

const weather = defineTool({
  name: "get_weather",
  description: "Current weather for a city",
  parameters: z.object({ city: z.string(), days: z.number().int().optional() }),
  execute: () => "",
}).spec;
const report = defineTool({
  name: "report_weather",
  description: "Report the weather to the user",
  parameters: z.object({ summary: z.string() }),
  execute: () => "",
}).spec;
const essay = defineTool({
  name: "write_essay",
  description: "Write a long essay",
  parameters: z.object({ text: z.string().min(400) }),
  execute: () => "",
}).spec;
const tools = [weather, report];
const question = [
  { role: "system", content: "You report the weather." },
  { role: "user", content: "Weather in Paris?" },
];

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

function expectValidCalls(response: LLMResponse, specs: ToolSpec[]): ToolCall[] {
  expect(Array.isArray(response)).toBe(true);
  const calls = response as ToolCall[];
  expect(calls.length).toBeGreaterThan(0);
  for (const call of calls) {
    const spec = specs.find((candidate) => candidate.name === call.tool);
    expect(spec, `unknown tool ${call.tool}`).toBeDefined();
    expect(spec?.parameters.safeParse(call.args).success, JSON.stringify(call.args)).toBe(true);
  }
  return calls;
}

describe("LlamaCppClient on the tiny random test model", () => {
  let modelPath = "";
  const clients: LlamaCppClient[] = [];
  // One thread: vitest runs test files in parallel, and llama.cpp threads that must wait for each
  // other on an oversubscribed CPU turn a 20 ms call into seconds. The default is tested on its own.
  const makeClient = (
    options: Partial<ConstructorParameters<typeof LlamaCppClient>[0]> = {},
  ): LlamaCppClient => {
    const client = new LlamaCppClient({
      modelPath,
      contextSize: 1024,
      threads: 1,
      maxTokens: 24,
      logger: () => {},
      ...options,
    });
    clients.push(client);
    return client;
  };

  beforeAllOrFail(async () => {
    modelPath = await ensureTestModel();
  });

  afterAll(async () => {
    for (const client of clients) await client.dispose();
  });

  it("loads lazily with the requested context and one thread per core", async () => {
    const client = makeClient({ threads: undefined });
    expect(await client.getContextLength()).toBe(1024);
    const info = await client.load();
    expect(info).toMatchObject({
      modelPath,
      contextSize: 1024,
      threads: availableParallelism(),
      architecture: "llama",
    });
    expect(info.parameters).toBeGreaterThan(100_000);
    expect(info.chatWrapper.length).toBeGreaterThan(0);
  });

  it("generates a text answer and reuses the KV cache for a repeated prompt", async () => {
    const client = makeClient({ mode: "free" });
    const first = await client.send(question);
    expect(Array.isArray(first)).toBe(false);
    expect(typeof (first as { content: string }).content).toBe("string");
    const afterFirst = client.usage;
    expect(afterFirst.calls).toBe(1);
    expect(afterFirst.outputTokens).toBeGreaterThan(0);
    await client.send(question);
    const secondInput = client.usage.inputTokens - afterFirst.inputTokens;
    expect(secondInput).toBeLessThan(afterFirst.inputTokens / 4);
  });

  it("returns a grammar-made call to a known tool with valid arguments, even with random weights", async () => {
    for (const options of [{}, { temperature: 0.8, seed: 2 }]) {
      const client = makeClient({
        toolChoice: "required",
        maxParallelToolCalls: 1,
        maxTokens: 64,
        ...options,
      });
      const calls = expectValidCalls(await client.send(question, tools), tools);
      expect(calls).toHaveLength(1);
    }
  });

  it("takes a call's SendOptions.toolChoice over its own: required, one named tool, none", async () => {
    const client = makeClient({ maxParallelToolCalls: 1, maxTokens: 64 });
    expect(
      expectValidCalls(await client.send(question, tools, { toolChoice: "required" }), tools),
    ).toHaveLength(1);
    const named = expectValidCalls(
      await client.send(question, tools, { toolChoice: { name: "get_weather" } }),
      tools,
    );
    expect(named.map((call) => call.tool)).toEqual(["get_weather"]);
    expect(Array.isArray(await client.send(question, tools, { toolChoice: "none" }))).toBe(false);
  });

  it("answers a forced call with one call, not one call after another until the token cap (issue 36)", async () => {
    // node-llama-cpp starts another call after each call unless the model ends its turn at once:
    // the random model never does, so an unbounded answer is a run of calls until maxTokens.
    for (const seed of [1, 2, 3]) {
      const client = makeClient({ temperature: 0.8, seed, maxTokens: 200 });
      const calls = expectValidCalls(await client.send(question, [report], { toolChoice: "required" }), [
        report,
      ]);
      expect(calls).toHaveLength(1);
      expect(client.usage.outputTokens).toBeLessThan(100);
    }
  });

  it("lets an answer hold several calls when the call asks for parallel calls", async () => {
    const counts: number[] = [];
    for (const seed of [1, 2, 3]) {
      const client = makeClient({ temperature: 0.8, seed, maxTokens: 200 });
      const response = await client.send(question, [report], {
        toolChoice: "required",
        parallelToolCalls: true,
      });
      counts.push(expectValidCalls(response, [report]).length);
      const capped = makeClient({ temperature: 0.8, seed, maxTokens: 200, maxParallelToolCalls: 2 });
      const twoAtMost = await capped.send(question, [report], {
        toolChoice: "required",
        parallelToolCalls: true,
      });
      expect(expectValidCalls(twoAtMost, [report]).length).toBeLessThanOrEqual(2);
    }
    expect(Math.max(...counts)).toBeGreaterThan(2);
  });

  it("bounds an answer by DEFAULT_MAX_TOKENS when no maxTokens is given", async () => {
    // Functions mode with parallel calls on: the random model calls until something stops it.
    const client = makeClient({ temperature: 0.8, seed: 1, maxTokens: undefined, contextSize: 4096 });
    await client.send(question, [report], { toolChoice: "required", parallelToolCalls: true });
    expect(client.usage.outputTokens).toBe(DEFAULT_MAX_TOKENS);
  });

  it("runs a two-step workflow with toolSubsets: steps to its end in seconds, one call per answer (issue 36)", async () => {
    // The setup: functions mode, no maxTokens, no maxParallelToolCalls, a per-step subset.
    const client = makeClient({ temperature: 0.8, seed: 1, maxTokens: undefined, contextSize: 4096 });
    const lookup = defineTool({
      name: "lookup_order_status",
      description: "Look up an order's status",
      parameters: z.object({ order_id: z.string() }),
      execute: ({ order_id }) => `Order ${order_id}: shipped`,
    });
    const reportStatus = defineTool({
      name: "report_status",
      description: "Report the order's status",
      parameters: z.object({ order_id: z.string(), status: z.string() }),
      execute: ({ order_id, status }) => ({ order_id, status }),
    });
    const workflow = defineWorkflow({
      name: "order-status",
      description: "Look up an order, then report it",
      tools: [lookup, reportStatus],
      requiredSteps: ["lookup_order_status"],
      terminalTool: "report_status",
      systemPrompt: "Look up the order, then report its status.",
    });
    const batches: number[] = [];
    const runner = new WorkflowRunner({
      client,
      contextManager: new ContextManager({ strategy: new TieredCompact(), budgetTokens: 3000 }),
      maxIterations: 8,
      toolSubsets: "steps",
      onMessage: (message) => {
        if (message.metadata.type === MessageType.TOOL_CALL) batches.push(message.toolCalls?.length ?? 0);
      },
    });
    const started = performance.now();
    const outcome = await runner.run(workflow, "Status of order A-1042?").catch((error: unknown) => error);
    expect(performance.now() - started).toBeLessThan(20_000);
    // Finished, or stopped by a guardrail budget: never the engine failing on a full context.
    if (outcome instanceof Error) {
      expect(outcome).toBeInstanceOf(ForgeError);
      expect(outcome).not.toBeInstanceOf(BackendError);
    }
    expect(batches.every((size) => size === 1)).toBe(true);
    expect(client.usage.calls).toBeLessThanOrEqual(8);
    expect(client.usage.outputTokens).toBeLessThanOrEqual(8 * DEFAULT_MAX_TOKENS);
  });

  it("renders a whole tool-calling history, unknown tools and nudges included", async () => {
    const client = makeClient({ toolChoice: "required", maxParallelToolCalls: 1, maxTokens: 64 });
    const history = [
      ...question,
      {
        role: "assistant",
        content: "",
        tool_calls: [
          { id: "c1", type: "function", function: { name: "get_wether", arguments: '{"city":"Paris"}' } },
        ],
      },
      {
        role: "tool",
        content: "[UnknownTool] get_wether does not exist",
        tool_call_id: "c1",
        name: "get_wether",
      },
      {
        role: "assistant",
        content: "",
        tool_calls: [
          { id: "c2", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
        ],
      },
      { role: "tool", content: "22°C and sunny", tool_call_id: "c2", name: "get_weather" },
      { role: "assistant", content: "It is sunny." },
      { role: "user", content: "That was not a valid tool call. Call a tool." },
    ];
    expectValidCalls(await client.send(history, tools), tools);
  });

  it("streams deltas, then one FINAL chunk with the response", async () => {
    const client = makeClient({ toolChoice: "required", maxParallelToolCalls: 1, maxTokens: 64 });
    const chunks = await collect(client.sendStream(question, tools));
    const final = chunks.at(-1);
    expect(final?.type).toBe(ChunkType.FINAL);
    expect(chunks.filter((chunk) => chunk.type === ChunkType.FINAL)).toHaveLength(1);
    const deltas = chunks.slice(0, -1);
    expect(deltas.length).toBeGreaterThan(0);
    expect(deltas.every((chunk) => chunk.type === ChunkType.TOOL_CALL_DELTA)).toBe(true);
    const [call] = expectValidCalls(final?.response as LLMResponse, tools);
    const streamedArgs = deltas.map((chunk) => chunk.content).join("");
    expect(JSON.parse(streamedArgs)).toMatchObject(call?.args ?? {});
  });

  it("streams free text as TEXT_DELTA chunks that add up to the FINAL text", async () => {
    // The random model often ends its turn at once; take the first seed that makes it write.
    for (const seed of [1, 4, 5, 6, 7, 8]) {
      const client = makeClient({ mode: "free", temperature: 0.8, seed });
      const chunks = await collect(client.sendStream(question));
      const final = chunks.at(-1);
      expect(final?.type).toBe(ChunkType.FINAL);
      const text = chunks.slice(0, -1);
      expect(text.every((chunk) => chunk.type === ChunkType.TEXT_DELTA)).toBe(true);
      expect(text.map((chunk) => chunk.content).join("")).toBe(
        (final?.response as { content: string } | undefined)?.content,
      );
      if (text.length > 0) return;
    }
    throw new Error("no seed made the model write text");
  });

  it("applies per-call sampling (SendOptions.sampling) to that call only", async () => {
    // The random model often ends its turn at once; take the first seed that makes it write.
    for (const seed of [1, 4, 5, 6, 7, 8]) {
      const client = makeClient({ mode: "free", temperature: 0.8, seed, maxTokens: 24 });
      await client.send(question);
      const unconstrained = client.usage.outputTokens;
      if (unconstrained <= 4) continue;
      await client.send(question, [], { sampling: { maxTokens: 2 } });
      const constrained = client.usage.outputTokens - unconstrained;
      expect(constrained).toBeLessThanOrEqual(2);
      // The next call without the override is back to the client's own maxTokens.
      await client.send(question);
      expect(client.usage.outputTokens - unconstrained - constrained).toBeGreaterThan(2);
      return;
    }
    throw new Error("no seed made the model write more than 4 tokens");
  });

  it("rejects with the abort reason soon after an abort mid-generation", async () => {
    const client = makeClient({ toolChoice: "required", maxParallelToolCalls: 1, maxTokens: 600 });
    const controller = new AbortController();
    const reason = new Error("user cancelled");
    let abortedAt = 0;
    let streamed = "";
    const run = (async () => {
      for await (const chunk of client.sendStream(question, [essay], { signal: controller.signal })) {
        streamed += chunk.content ?? "";
        if (chunk.type === ChunkType.TOOL_CALL_DELTA && abortedAt === 0) {
          abortedAt = performance.now();
          controller.abort(reason);
        }
      }
    })();
    await expect(run).rejects.toBe(reason);
    expect(abortedAt).toBeGreaterThan(0);
    expect(performance.now() - abortedAt).toBeLessThan(5_000);
    // The grammar demands at least 400 characters of text: the call was cut off long before.
    expect(streamed.length).toBeGreaterThan(0);
    expect(streamed.length).toBeLessThan(100);
    expectValidCalls(await client.send(question, tools), tools);
  });

  it("stops generating when the stream's consumer stops reading, and stays usable", async () => {
    const client = makeClient({ toolChoice: "required", maxParallelToolCalls: 1, maxTokens: 600 });
    let streamed = "";
    for await (const chunk of client.sendStream(question, [essay])) {
      streamed += chunk.content ?? "";
      break;
    }
    expect(streamed.length).toBeGreaterThan(0);
    expect(client.usage.outputTokens).toBeLessThan(100);
    expectValidCalls(await client.send(question, tools), tools);
    expect(client.usage.calls).toBe(2);
  });

  it("rejects at once with the reason of a signal aborted before the call", async () => {
    const client = makeClient();
    const reason = new Error("too late");
    await expect(client.send(question, tools, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(client.usage.calls).toBe(0);
  });

  it("runs concurrent calls one after the other", async () => {
    const client = makeClient({ toolChoice: "required", maxParallelToolCalls: 1, maxTokens: 64 });
    const [first, second] = await Promise.all([client.send(question, tools), client.send(question, tools)]);
    expectValidCalls(first as LLMResponse, tools);
    expectValidCalls(second as LLMResponse, tools);
    expect(client.usage.calls).toBe(2);
  });

  it("throws ModelNotFoundError for a missing model file", () => {
    const create = () => new LlamaCppClient({ modelPath: "/nonexistent/model.gguf" });
    expect(create).toThrow(ModelNotFoundError);
    try {
      create();
    } catch (error) {
      expect(error).toBeInstanceOf(ForgeError);
      expect((error as ModelNotFoundError).name).toBe("ModelNotFoundError");
      expect((error as ModelNotFoundError).modelPath).toBe("/nonexistent/model.gguf");
    }
  });

  it("applies the sampling rules: unknown model opted in fails, explicit values win", () => {
    expect(() => makeClient({ recommendedSampling: true })).toThrow(UnsupportedModelError);
    const lines: string[] = [];
    const client = makeClient({
      model: "qwen2.5-7b-instruct",
      recommendedSampling: true,
      topK: 5,
      logger: (line) => lines.push(line),
    });
    expect(client.sampling).toEqual({ temperature: 0.7, topP: 0.8, topK: 5 });
    makeClient({ model: "qwen2.5-7b-instruct", logger: (line) => lines.push(line) });
    expect(lines).toHaveLength(1);
  });
});

describe("toChatHistory", () => {
  it("groups an assistant turn with its calls, their results and what follows", () => {
    const history = toChatHistory([
      { role: "system", content: "sys" },
      { role: "user", content: "hi" },
      {
        role: "assistant",
        content: "thinking",
        tool_calls: [
          { id: "a", type: "function", function: { name: "f", arguments: '{"x":1}' } },
          { id: "b", type: "function", function: { name: "g", arguments: "not json" } },
        ],
      },
      { role: "tool", content: "ra", tool_call_id: "a", name: "f" },
      { role: "tool", content: "rb", tool_call_id: "b", name: "g" },
      {
        role: "assistant",
        content: "",
        tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "{}" } }],
      },
      { role: "tool", content: "rc", tool_call_id: "c", name: "f" },
      { role: "user", content: [{ type: "text", text: "nudge" }] },
      { role: "tool", content: "orphan", tool_call_id: "zzz", name: "h" },
    ]);
    expect(history).toEqual([
      { type: "system", text: "sys" },
      { type: "user", text: "hi" },
      {
        type: "model",
        response: [
          "thinking",
          { type: "functionCall", name: "f", params: { x: 1 }, result: "ra", startsNewChunk: true },
          { type: "functionCall", name: "g", params: {}, result: "rb", startsNewChunk: false },
          { type: "functionCall", name: "f", params: {}, result: "rc", startsNewChunk: true },
        ],
      },
      { type: "user", text: "nudge" },
      { type: "user", text: "[Tool result for h] orphan" },
    ]);
  });
});

describe("toGbnfSchema and dropOmittedOptionals", () => {
  const parameters = z.object({
    city: z.string().describe("City"),
    days: z.number().int().min(1).optional(),
    unit: z.enum(["c", "f"]),
    when: z.string().nullable(),
    pair: z.tuple([z.string(), z.number()]),
    anything: z.unknown(),
  });
  const spec = defineTool({ name: "t", description: "", parameters, execute: () => "" }).spec;

  it("keeps what the grammar can express and makes optional properties nullable", () => {
    expect(toGbnfSchema(toolJsonSchema(spec))).toEqual({
      type: "object",
      properties: {
        city: { type: "string", description: "City" },
        days: { oneOf: [{ type: "integer" }, { type: "null" }] },
        unit: { enum: ["c", "f"] },
        when: { type: ["string", "null"] },
        pair: {
          type: "array",
          prefixItems: [{ type: "string" }, { type: "number" }],
          minItems: 2,
          maxItems: 2,
        },
        anything: {
          oneOf: [
            { type: ["string", "number", "integer", "boolean", "null"] },
            { type: "object", additionalProperties: true },
            { type: "array" },
          ],
        },
      },
      additionalProperties: false,
    });
  });

  it("drops the nulls of left-out optionals but keeps nulls the schema allows", () => {
    const args = dropOmittedOptionals(
      { city: "Paris", days: null, unit: "c", when: null, pair: ["a", 1], anything: null },
      toolJsonSchema(spec),
    );
    expect(args).toEqual({ city: "Paris", unit: "c", when: null, pair: ["a", 1], anything: null });
    expect(parameters.safeParse(args).success).toBe(true);
  });
});

describe("toLLMResponse", () => {
  const generation = (response: string, functionCalls?: { functionName: string; params: unknown }[]) =>
    ({
      response,
      fullResponse: [{ type: "segment", segmentType: "thought", text: " pondering ", ended: true }, response],
      functionCalls: functionCalls?.map((call) => ({ ...call, raw: [] })),
      lastEvaluation: { cleanHistory: [], contextWindow: [], contextShiftMetadata: null },
      metadata: { stopReason: functionCalls ? "functionCalls" : "eogToken" },
    }) as unknown as Parameters<typeof toLLMResponse>[0];

  it("maps grammar calls, dropping left-out optionals, with text and thoughts as reasoning", () => {
    const response = toLLMResponse(
      generation("Let me look.", [{ functionName: "get_weather", params: { city: "Paris", days: null } }]),
      tools,
      "functions",
    );
    expect(response).toEqual([
      { tool: "get_weather", args: { city: "Paris" }, reasoning: "pondering\n\nLet me look." },
    ]);
  });

  it("rescues calls from free text, and returns the exact text otherwise", () => {
    const call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>';
    expect(toLLMResponse(generation(call), tools, "free")).toEqual([
      { tool: "get_weather", args: { city: "Oslo" }, reasoning: "pondering" },
    ]);
    const unknown = call.replace("get_weather", "get_wether");
    expect(toLLMResponse(generation(unknown), tools, "free")).toEqual({ content: unknown });
    // Functions mode leaves text calls to the loop's rescue.
    expect(toLLMResponse(generation(call), tools, "functions")).toEqual({ content: call });
  });
});

describe("chat wrapper views", () => {
  it("describe the tools in the model's format, or force a call with the call prefix", async () => {
    const { QwenChatWrapper } = await import("node-llama-cpp");
    const { LlamaText } = await import("node-llama-cpp");
    const wrapper = new QwenChatWrapper();
    const chatHistory = [
      { type: "user" as const, text: "Weather?" },
      { type: "model" as const, response: [] },
    ];
    const functions = toChatModelFunctions(tools);
    const plain = wrapper.generateContextState({ chatHistory }).contextText.toString();
    const described = describeFunctions(wrapper, functions).generateContextState({ chatHistory });
    expect(plain).not.toContain("get_weather");
    expect(described.contextText.toString()).toContain("get_weather");
    expect(described.contextText.toString()).toContain("Report the weather to the user");
    const forced = forceFunctionCall(wrapper, LlamaText).generateContextState({
      chatHistory,
      availableFunctions: functions,
    });
    expect(forced.contextText.toString()).toBe(
      wrapper.generateContextState({ chatHistory, availableFunctions: functions }).contextText.toString(),
    );
    expect(forced).toMatchObject({ noPrefixTrigger: { type: "functionCall" } });
    const inject = (forced as { noPrefixTrigger: { inject: { toString(): string } } }).noPrefixTrigger.inject;
    expect(inject.toString()).toContain(LlamaText(wrapper.settings.functions.call.prefix).toString());
  });
});

describe("callsPerAnswer", () => {
  it("is one call unless the call asks for parallel calls or the client sets a limit", () => {
    expect(callsPerAnswer(undefined, undefined)).toBe(1);
    expect(callsPerAnswer(undefined, true)).toBeUndefined();
    expect(callsPerAnswer(3, undefined)).toBe(3);
    expect(callsPerAnswer(3, true)).toBe(3);
  });

  it("is one call when the call turns parallel calls off, whatever the client's limit", () => {
    expect(callsPerAnswer(3, false)).toBe(1);
    expect(callsPerAnswer(undefined, false)).toBe(1);
  });
});

describe("endsRepeating", () => {
  const call = '{"name": "count_stock", "arguments": {"medicine": "amoxicillin"}} ';

  it("is true once one stretch ends the text REPEAT_TIMES times in a row, wherever the copies start", () => {
    expect(endsRepeating(`Here: ${call.repeat(REPEAT_TIMES)}`)).toBe(true);
    // Cut inside a copy: the last stretches are still copies of one another.
    expect(endsRepeating(`${call.repeat(REPEAT_TIMES + 1)}{"name": "cou`)).toBe(true);
  });

  it("is false for fewer copies, short repeats and ordinary text", () => {
    expect(endsRepeating(call.repeat(REPEAT_TIMES - 1))).toBe(false);
    expect(endsRepeating("ha ".repeat(20))).toBe(false);
    expect(
      endsRepeating("The order A-1042 has shipped; it left the warehouse on Monday and arrives Friday."),
    ).toBe(false);
    expect(endsRepeating(`${call.repeat(REPEAT_TIMES - 1)}{"name": "report", "arguments": {}}`)).toBe(false);
  });
});
