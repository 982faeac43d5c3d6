/**
 * The real OpenAICompatibleClient against a real llama-server (built from the bundled llama.cpp,
 * tiny random-weight model with a Hermes tool template) on 127.0.0.1: native, prompt and auto
 * modes, streaming, forced and cut-off tool calls, /props, slot and prompt-cache flags, an abort
 * mid-stream, and whole WorkflowRunner runs. Every request the client sends is recorded on its
 * way out (with the server's answer) so the tests can assert what the server accepted.
 * One server for the file; temperature 0, a fixed seed and at most 64 new tokens per request.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import {
  OpenAICompatibleClient,
  type OpenAICompatibleClientOptions,
} from "../../src/clients/openai/compatible-client.ts";
import { ContextManager } from "../../src/context/context-manager.ts";
import { TieredCompact } from "../../src/context/tiered-compact.ts";
import {
  BackendError,
  ForgeError,
  MaxIterationsError,
  PrerequisiteError,
  StepEnforcementError,
  ToolCallError,
  ToolExecutionError,
} from "../../src/core/errors.ts";
import { type Message, MessageType } from "../../src/core/messages.ts";
import { defineTool, type ToolSpec } from "../../src/core/tools.ts";
import { ChunkType, type LLMResponse, type StreamChunk, type ToolCall } from "../../src/core/types.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { startTestLlamaServer, type TestLlamaServer } from "../helpers/llama-server-process.ts";
import { weatherWorkflow } from "../helpers/workflows.ts";

const SEED = 7;
const MAX_TOKENS = 64;

const weather = defineTool({
  name: "get_weather",
  description: "Current weather for a city",
  parameters: z.object({ city: z.string() }),
  execute: () => "",
}).spec;
const report = defineTool({
  name: "report_weather",
  description: "Report the weather to the user",
  parameters: z.object({ city: z.string(), weather: z.string() }),
  execute: () => "",
}).spec;
const tools = [weather, report];
const toolNames = tools.map((tool) => tool.name);
const question = [
  { role: "system", content: "You report the weather." },
  { role: "user", content: "Weather in Paris?" },
];
const afterToolResult = [
  ...question,
  {
    role: "assistant",
    content: "",
    tool_calls: [
      { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
    ],
  },
  { role: "tool", tool_call_id: "call_1", name: "get_weather", content: "22°C and sunny in Paris" },
];

/** One chat request as it left the client, and what llama-server answered. */
interface RecordedExchange {
  body: Record<string, unknown>;
  status: number;
  /** The parsed JSON answer; `undefined` for a streamed (SSE) one. */
  answer: WireCompletion | undefined;
}

interface WireCompletion {
  choices: {
    finish_reason: string;
    message: { content: string | null; tool_calls?: { function: { name: string; arguments: string } }[] };
  }[];
  timings?: { cache_n: number; prompt_n: number };
}

let server: TestLlamaServer | undefined;
let baseUrl = "";
const exchanges: RecordedExchange[] = [];

beforeAllOrFail(async () => {
  server = await startTestLlamaServer({ ctx: 2048, slots: 1, threads: 2 });
  baseUrl = server.baseUrl;
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const request = input instanceof Request ? input.clone() : new Request(input, init);
    const response = await realFetch(input, init);
    if (request.method === "POST" && request.url.endsWith("/chat/completions")) {
      const body = JSON.parse(await request.text()) as Record<string, unknown>;
      const isJson = response.headers.get("content-type")?.includes("application/json") ?? false;
      const answer = isJson ? ((await response.clone().json()) as WireCompletion) : undefined;
      exchanges.push({ body, status: response.status, answer });
    }
    return response;
  });
}, 900_000);

afterAll(async () => {
  vi.restoreAllMocks();
  await server?.stop();
});

beforeEach(() => {
  exchanges.length = 0;
});

function makeClient(options: OpenAICompatibleClientOptions = {}): OpenAICompatibleClient {
  return new OpenAICompatibleClient({
    baseUrl: `${baseUrl}/v1`,
    temperature: 0,
    seed: SEED,
    maxTokens: MAX_TOKENS,
    logger: () => {},
    ...options,
  });
}

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

/** The response is a non-empty list of calls, each naming one of `specs` with arguments that fit its schema. */
function expectValidCalls(response: LLMResponse, specs: ToolSpec[]): ToolCall[] {
  expect(Array.isArray(response), JSON.stringify(response)).toBe(true);
  const calls = response as ToolCall[];
  expect(calls.length).toBeGreaterThan(0);
  for (const call of calls) {
    const spec = specs.find((candidate) => candidate.name === call.tool);
    expect(spec, `unknown tool ${call.tool}`).toBeDefined();
    expect(spec?.parameters.safeParse(call.args).success, JSON.stringify(call.args)).toBe(true);
  }
  return calls;
}

function onlyExchange(): RecordedExchange {
  expect(exchanges).toHaveLength(1);
  return exchanges[0]!;
}

function sentToolNames(body: Record<string, unknown>): string[] {
  return (body.tools as { function: { name: string } }[]).map((tool) => tool.function.name);
}

describe("OpenAICompatibleClient against a real llama-server", () => {
  it("native mode with tool_choice required returns schema-valid calls to known tools", async () => {
    const client = makeClient({ mode: "native", toolChoice: "required" });

    const calls = expectValidCalls(await client.send(question, tools), tools);

    const { body, status, answer } = onlyExchange();
    expect(status).toBe(200);
    expect(sentToolNames(body)).toEqual(toolNames);
    expect(body).toMatchObject({
      tool_choice: "required",
      stream: false,
      temperature: 0,
      seed: SEED,
      max_tokens: MAX_TOKENS,
      cache_prompt: true,
    });
    expect(answer?.choices[0]?.finish_reason).toBe("tool_calls");
    const wireCalls = answer?.choices[0]?.message.tool_calls ?? [];
    expect(calls.map((call) => call.tool)).toEqual(wireCalls.map((call) => call.function.name));
    expect(calls.map((call) => call.args)).toEqual(
      wireCalls.map((call) => JSON.parse(call.function.arguments)),
    );
  });

  it("forces a call again after a tool result (required) and no call at all with tool_choice none", async () => {
    const forced = makeClient({ mode: "native", toolChoice: "required" });
    expectValidCalls(await forced.send(afterToolResult, tools), tools);
    const [{ body }] = exchanges as [RecordedExchange];
    // The tool result went back as OpenAI wire and the server took it.
    expect((body.messages as Record<string, unknown>[]).map((message) => message.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
    ]);
    expect(exchanges[0]?.status).toBe(200);

    const forbidden = makeClient({ mode: "native", toolChoice: "none" });
    const response = await forbidden.send(question, tools);
    expect(response).toEqual({ content: expect.any(String) });
    expect(exchanges[1]?.body).toMatchObject({ tool_choice: "none" });
    expect(exchanges[1]?.answer?.choices[0]?.message.tool_calls ?? []).toEqual([]);
  });

  it("prompt mode sends no tools field, folds the tools into the system prompt, and parses what comes back", async () => {
    const client = makeClient({ mode: "prompt", toolChoice: "required" });

    const response = await client.send(afterToolResult, tools);

    const { body, status, answer } = onlyExchange();
    expect(status).toBe(200);
    expect(body).not.toHaveProperty("tools");
    expect(body).not.toHaveProperty("tool_choice");
    const messages = body.messages as { role: string; content: string }[];
    expect(messages.map((message) => message.role)).toEqual(["system", "user", "assistant", "user"]);
    expect(messages[0]?.content).toMatch(
      /^You report the weather\.\n\nYou have access to the following tools:/,
    );
    expect(messages[0]?.content).toContain("## get_weather");
    expect(messages[0]?.content).toContain("## report_weather");
    expect(messages[2]?.content).toBe('{"tool":"get_weather","args":{"city":"Paris"}}');
    expect(messages[3]?.content).toBe("[Tool result for get_weather] 22°C and sunny in Paris");
    const wireText = answer?.choices[0]?.message.content ?? "";
    if (Array.isArray(response)) {
      // Rescued from the text: every call names a listed tool.
      expect(response.every((call) => toolNames.includes(call.tool))).toBe(true);
    } else {
      expect(response.content).toBe(wireText);
    }
  });

  it("auto mode resolves to native on the first request with tools, once, without a fallback", async () => {
    const lines: string[] = [];
    const client = makeClient({ toolChoice: "required", logger: (line) => lines.push(line) });
    expect(client.mode).toBe("auto");
    expect(client.resolvedMode).toBeUndefined();

    await client.send(question);
    expect(client.resolvedMode).toBeUndefined();
    expectValidCalls(await client.send(question, tools), tools);
    expect(client.resolvedMode).toBe("native");
    expectValidCalls(await client.send(afterToolResult, tools), tools);
    expect(client.resolvedMode).toBe("native");

    // One request per call: the server took `tools` the first time, so nothing was retried.
    expect(exchanges.map((exchange) => exchange.status)).toEqual([200, 200, 200]);
    expect(exchanges.map((exchange) => "tools" in exchange.body)).toEqual([false, true, true]);
    expect(lines.filter((line) => line.includes("rejected native tool calling"))).toEqual([]);
  });

  it("streams tool-call deltas, then a FINAL equal to the non-streaming answer", async () => {
    const client = makeClient({ mode: "native", toolChoice: "required" });

    const nonStreaming = await client.send(question, tools);
    const chunks = await collect(client.sendStream(question, tools));

    expectValidCalls(nonStreaming, tools);
    const final = chunks.at(-1);
    expect(final?.type).toBe(ChunkType.FINAL);
    expect(final?.response).toEqual(nonStreaming);
    const deltas = chunks.slice(0, -1);
    expect(deltas.every((chunk) => chunk.type === ChunkType.TOOL_CALL_DELTA)).toBe(true);
    expect(deltas.length).toBeGreaterThan(1);
    // The deltas add up to exactly the arguments the non-streaming answer carried.
    const wireArguments = exchanges[0]?.answer?.choices[0]?.message.tool_calls?.map(
      (call) => call.function.arguments,
    );
    expect(deltas.map((chunk) => chunk.content).join("")).toBe(wireArguments?.join(""));
    expect(exchanges[1]?.body).toMatchObject({ stream: true, tool_choice: "required" });
  });

  it("streams text deltas that add up to the FINAL text, which equals the non-streaming answer", async () => {
    const client = makeClient({ mode: "native" });

    const nonStreaming = await client.send(question);
    const chunks = await collect(client.sendStream(question));

    expect(nonStreaming).toEqual({ content: exchanges[0]?.answer?.choices[0]?.message.content ?? "" });
    const final = chunks.at(-1);
    expect(final).toEqual({ type: ChunkType.FINAL, response: nonStreaming });
    const deltas = chunks.slice(0, -1);
    expect(deltas.every((chunk) => chunk.type === ChunkType.TEXT_DELTA)).toBe(true);
    expect(deltas.map((chunk) => chunk.content).join("")).toBe((nonStreaming as { content: string }).content);
  });

  it("hands a call cut off by max_tokens back with argumentsError, streamed or not, never with broken arguments", async () => {
    // 30 tokens end inside the arguments: llama-server reports a call whose arguments are "{".
    const client = makeClient({ mode: "native", toolChoice: "required", maxTokens: 30 });

    const response = await client.send(question, tools);
    const chunks = await collect(client.sendStream(question, tools));

    expect(exchanges[0]?.answer?.choices[0]?.finish_reason).toBe("length");
    // The loop answers it on the tool channel (ToolArgumentError), not as a call to run.
    expect(response).toEqual([
      { tool: "get_weather", args: {}, argumentsError: expect.stringMatching(/^invalid JSON: /) },
    ]);
    expect(chunks.at(-1)).toEqual({ type: ChunkType.FINAL, response });
  });

  it("reads the context length from /props", async () => {
    await expect(makeClient().getContextLength()).resolves.toBe(2048);
    await expect(makeClient({ baseUrl }).getContextLength()).resolves.toBe(2048);
  });

  it("sends the slot id and cache_prompt; a repeated prompt is served from the slot's cache only when caching is on", async () => {
    const cached = makeClient({ mode: "native", slotId: 0, cachePrompt: true });
    const uncached = makeClient({ mode: "native", slotId: 0, cachePrompt: false });

    await cached.send(question);
    await cached.send(question);
    await uncached.send(question);
    await uncached.send(question);

    expect(exchanges.map((exchange) => exchange.status)).toEqual([200, 200, 200, 200]);
    expect(exchanges.map((exchange) => [exchange.body.id_slot, exchange.body.cache_prompt])).toEqual([
      [0, true],
      [0, true],
      [0, false],
      [0, false],
    ]);
    const cacheHits = exchanges.map((exchange) => exchange.answer?.timings?.cache_n);
    expect(cacheHits[1]).toBeGreaterThan(0);
    expect(cacheHits.slice(2)).toEqual([0, 0]);
  });

  it("aborts mid-stream with the caller's reason and leaves the server serving", async () => {
    const client = makeClient({ mode: "native", toolChoice: "required" });
    const controller = new AbortController();
    const reason = new Error("user pressed stop");
    const received: StreamChunk[] = [];

    const outcome = await (async () => {
      for await (const chunk of client.sendStream(question, tools, { signal: controller.signal })) {
        received.push(chunk);
        if (chunk.type === ChunkType.TOOL_CALL_DELTA) controller.abort(reason);
      }
    })().then(
      () => "completed",
      (error: unknown) => error,
    );

    expect(outcome).toBe(reason);
    // Nothing after the abort completed the answer (chunks already parsed may still drain).
    expect(received.length).toBeGreaterThan(0);
    expect(received.every((chunk) => chunk.type === ChunkType.TOOL_CALL_DELTA)).toBe(true);
    await waitForIdleSlot();
    expectValidCalls(await client.send(question, tools), tools);
  });

  it("runs a forced-call workflow to the terminal tool's result or a typed loop error, executing the calls it got", async () => {
    const { workflow, executed } = weatherWorkflow();
    const client = makeClient({ mode: "native", toolChoice: "required" });
    const budgetTokens = (await client.getContextLength()) ?? 0;
    const messages: Message[] = [];
    const runner = new WorkflowRunner({
      client,
      contextManager: new ContextManager({ strategy: new TieredCompact(), budgetTokens }),
      maxIterations: 3,
      onMessage: (message) => messages.push(message),
    });

    const outcome = await settle(
      runner.run(workflow, "What is the weather in Paris?", { promptVars: { user: "Ada" } }),
    );

    expectResultOrLoopError(outcome);
    if ("result" in outcome) {
      expect(outcome.result).toEqual({ reported: expect.any(String) });
      expect(executed.at(-1)).toMatch(/^report_weather:/);
      expect(executed.findIndex((entry) => entry.startsWith("get_weather:"))).toBeLessThan(
        executed.length - 1,
      );
    }
    // Every forced call was validated and executed: one tool result per executed call, in order.
    const results = messages.filter((message) => message.metadata.type === MessageType.TOOL_RESULT);
    expect(results.length).toBeGreaterThan(0);
    expect(results.map((message) => message.toolName)).toEqual(executed.map((entry) => entry.split(":")[0]));
    expect(exchanges.length).toBeLessThanOrEqual(3);
    expect(exchanges.every((exchange) => exchange.status === 200)).toBe(true);
  }, 45_000);

  it("streams an auto-choice workflow and nudges after every answer that is not a tool call", async () => {
    const { workflow } = weatherWorkflow();
    const client = makeClient({ mode: "auto" });
    const messages: Message[] = [];
    const runner = new WorkflowRunner({
      client,
      contextManager: new ContextManager({ strategy: new TieredCompact(), budgetTokens: 2048 }),
      maxIterations: 4,
      stream: true,
      onMessage: (message) => messages.push(message),
    });

    const outcome = await settle(
      runner.run(workflow, "What is the weather in Paris?", { promptVars: { user: "Ada" } }),
    );

    expectResultOrLoopError(outcome);
    expect(client.resolvedMode).toBe("native");
    const types = messages.map((message) => message.metadata.type);
    const textAnswers = types.flatMap((type, index) => (type === MessageType.TEXT_RESPONSE ? [index] : []));
    const guardrailActions = types.filter(
      (type) => type === MessageType.TOOL_RESULT || type.endsWith("_nudge"),
    ).length;
    expect(guardrailActions).toBeGreaterThan(0);
    // A text answer that did not end the run is followed by a retry nudge.
    for (const index of textAnswers.filter((index) => index < types.length - 1)) {
      expect(types[index + 1]).toBe(MessageType.RETRY_NUDGE);
    }
  }, 45_000);
});

type Outcome = { result: unknown } | { error: unknown };

function settle(run: Promise<unknown>): Promise<Outcome> {
  return run.then(
    (result) => ({ result }),
    (error: unknown) => ({ error }),
  );
}

/** The run ended in the terminal tool's result or in one of the loop's own typed errors. */
function expectResultOrLoopError(outcome: Outcome): void {
  if ("result" in outcome) return;
  const { error } = outcome;
  expect(error).toBeInstanceOf(ForgeError);
  expect(error).not.toBeInstanceOf(BackendError);
  const loopErrors = [
    MaxIterationsError,
    ToolCallError,
    StepEnforcementError,
    PrerequisiteError,
    ToolExecutionError,
  ];
  expect(
    loopErrors.some((type) => error instanceof type),
    String(error),
  ).toBe(true);
  expect((error as ForgeError).messages?.length).toBeGreaterThan(2);
}

/** Polls llama-server's /slots until no slot is generating (the aborted request was cancelled). */
async function waitForIdleSlot(): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const slots = (await (await fetch(`${baseUrl}/slots`)).json()) as { is_processing: boolean }[];
    if (slots.every((slot) => !slot.is_processing)) return;
    await sleep(50);
  }
  throw new Error("llama-server kept generating after the client aborted");
}
