/**
 * The Vercel AI SDK against the proxy on 127.0.0.1, in front of a scripted chat-completions
 * backend: `@ai-sdk/openai`'s default provider (the Responses API) and `@ai-sdk/openai-compatible`
 * (chat completions), each running a tool call the proxy returned and ending on the model's answer.
 */
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, stepCountIs, streamText, tool } from "ai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { RunningProxy } from "../../src/proxy/server.ts";
import { startTestProxy } from "./helpers/proxy-fixture.ts";
import {
  type ScriptedBackend,
  startScriptedBackend,
  textCompletion,
  toolCallCompletion,
} from "./helpers/scripted-backend.ts";

let backend: ScriptedBackend;
let proxy: RunningProxy;

beforeAll(async () => {
  backend = await startScriptedBackend();
  proxy = await startTestProxy({ backendUrl: backend.url });
});

afterEach(() => {
  backend.assertDone();
  backend.requests.length = 0;
});

afterAll(async () => {
  await proxy.close();
  await backend.close();
});

type WireMessage = { role: string; content: string | null; tool_calls?: unknown[]; tool_call_id?: string };
const sentMessages = (index: number) => backend.chatRequests[index]?.body.messages as WireMessage[];

/** A weather tool whose `execute` records the cities it was asked about. */
function weatherTools(cities: string[]) {
  return {
    get_weather: tool({
      description: "Current weather for a city",
      inputSchema: z.object({ city: z.string() }),
      execute: async ({ city }) => {
        cities.push(city);
        return `4°C in ${city}`;
      },
    }),
  };
}

/** Scripts a call written as Qwen `<tool_call>` text, then the final answer as a respond call. */
function scriptWeatherTurn(): void {
  backend.push(
    textCompletion('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'),
    toolCallCompletion([{ name: "respond", args: { message: "It is 4°C in Oslo." } }]),
  );
}

/** The second backend request carried the call the SDK ran and its result. */
function expectToolResultSent(): void {
  const sent = sentMessages(1);
  expect(sent.map((message) => message.role)).toEqual(["user", "assistant", "tool"]);
  expect(sent[1]?.tool_calls).toMatchObject([
    { type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } },
  ]);
  const [call] = (sent[1]?.tool_calls ?? []) as { id: string }[];
  expect(sent[2]?.tool_call_id).toBe(call?.id);
  expect(sent[2]?.content).toContain("4°C in Oslo");
}

const responsesProvider = () => createOpenAI({ baseURL: `${proxy.url}/v1`, apiKey: "client-key" });

describe("AI SDK, @ai-sdk/openai default provider (Responses API)", () => {
  it("runs a tool step over POST /v1/responses and ends on the model's answer", async () => {
    scriptWeatherTurn();
    const cities: string[] = [];
    const result = await generateText({
      model: responsesProvider()("qwen3"),
      prompt: "Weather in Oslo?",
      tools: weatherTools(cities),
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    expect(result.text).toBe("It is 4°C in Oslo.");
    expect(cities).toEqual(["Oslo"]);
    expect(result.steps.map((step) => step.finishReason)).toEqual(["tool-calls", "stop"]);
    expect(result.steps[0]?.response.id).toMatch(/^resp_/);
    const routes = backend.requests.filter((request) => request.method === "POST").map((r) => r.path);
    expect(routes).toEqual(["/v1/chat/completions", "/v1/chat/completions"]);
    expectToolResultSent();
  });

  it("streams the same turn with streamText", async () => {
    scriptWeatherTurn();
    const cities: string[] = [];
    const result = streamText({
      model: responsesProvider()("qwen3"),
      prompt: "Weather in Oslo?",
      tools: weatherTools(cities),
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    let streamed = "";
    for await (const delta of result.textStream) streamed += delta;
    expect(streamed).toBe("It is 4°C in Oslo.");
    expect(await result.text).toBe("It is 4°C in Oslo.");
    expect(cities).toEqual(["Oslo"]);
    expect(backend.chatRequests.map((request) => request.body.stream)).toEqual([true, true]);
    expectToolResultSent();
  });

  it("carries an earlier turn's text with store: false, and names item_reference (the SDK's default) in a 400", async () => {
    backend.push(toolCallCompletion([{ name: "respond", args: { message: "Hello." } }]));
    const model = responsesProvider()("qwen3");
    const first = await generateText({
      model,
      prompt: "Say hello.",
      tools: weatherTools([]),
      maxRetries: 0,
      providerOptions: { openai: { store: false } },
    });
    expect(first.text).toBe("Hello.");

    const history = [
      { role: "user" as const, content: "Say hello." },
      ...first.response.messages,
      { role: "user" as const, content: "Again." },
    ];
    const refused = await generateText({ model, messages: history, maxRetries: 0 }).catch(
      (caught: unknown) => caught as Error,
    );
    expect(String(refused)).toMatch(/item_reference.*store: false/s);
    expect(backend.chatRequests).toHaveLength(1);

    backend.push(textCompletion("Hello again."));
    const second = await generateText({
      model,
      messages: history,
      maxRetries: 0,
      providerOptions: { openai: { store: false } },
    });
    expect(second.text).toBe("Hello again.");
    expect(sentMessages(1)).toEqual([
      { role: "user", content: "Say hello." },
      { role: "assistant", content: "Hello." },
      { role: "user", content: "Again." },
    ]);
  });
});

describe("AI SDK, @ai-sdk/openai-compatible (chat completions)", () => {
  const compatible = () =>
    createOpenAICompatible({ name: "forge", baseURL: `${proxy.url}/v1`, apiKey: "client-key" });

  it("runs a tool step over POST /v1/chat/completions and ends on the model's answer", async () => {
    scriptWeatherTurn();
    const cities: string[] = [];
    const result = await generateText({
      model: compatible()("qwen3"),
      prompt: "Weather in Oslo?",
      tools: weatherTools(cities),
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    expect(result.text).toBe("It is 4°C in Oslo.");
    expect(cities).toEqual(["Oslo"]);
    expect(result.steps.map((step) => step.finishReason)).toEqual(["tool-calls", "stop"]);
    expectToolResultSent();
  });

  it("streams the same turn with streamText", async () => {
    scriptWeatherTurn();
    const cities: string[] = [];
    const result = streamText({
      model: compatible()("qwen3"),
      prompt: "Weather in Oslo?",
      tools: weatherTools(cities),
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    let streamed = "";
    for await (const delta of result.textStream) streamed += delta;
    expect(streamed).toBe("It is 4°C in Oslo.");
    expect(cities).toEqual(["Oslo"]);
    expect(backend.chatRequests.map((request) => request.body.stream)).toEqual([true, true]);
    expectToolResultSent();
  });
});
