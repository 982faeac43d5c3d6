/**
 * The Vercel AI SDK against the proxy on 127.0.0.1, in front of a scripted chat-completions
 * backend: `@ai-sdk/openai`'s default provider (the Responses API) and `@ai-sdk/openai-compatible`
 * (chat completions), each running a tool call the proxy returned and ending on the model's answer.
 */
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, type LanguageModel, stepCountIs, streamText, tool } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { textCompletion, toolCallCompletion } from "./helpers/scripted-backend.ts";
import {
  expectWeatherResultSent,
  scriptWeatherTurn,
  sentMessages,
  useScriptedProxy,
  WEATHER_ANSWER,
} from "./helpers/sdk-turn.ts";

const scripted = useScriptedProxy();

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

const responsesModel = () =>
  createOpenAI({ baseURL: `${scripted.proxy.url}/v1`, apiKey: "client-key" })("qwen3");
const compatibleModel = () =>
  createOpenAICompatible({ name: "forge", baseURL: `${scripted.proxy.url}/v1`, apiKey: "client-key" })(
    "qwen3",
  );

/** `generateText` over the weather turn: the tool step, then the answer. */
async function generateWeatherTurn(model: LanguageModel) {
  scriptWeatherTurn(scripted.backend);
  const cities: string[] = [];
  const result = await generateText({
    model,
    prompt: "Weather in Oslo?",
    tools: weatherTools(cities),
    stopWhen: stepCountIs(3),
    maxRetries: 0,
  });
  expect(result.text).toBe(WEATHER_ANSWER);
  expect(cities).toEqual(["Oslo"]);
  expect(result.steps.map((step) => step.finishReason)).toEqual(["tool-calls", "stop"]);
  expectWeatherResultSent(scripted.backend, ["user", "assistant", "tool"], "4°C in Oslo");
  return result;
}

/** `streamText` over the weather turn: the text arrives as deltas, both backend calls streamed. */
async function streamWeatherTurn(model: LanguageModel) {
  scriptWeatherTurn(scripted.backend);
  const cities: string[] = [];
  const result = streamText({
    model,
    prompt: "Weather in Oslo?",
    tools: weatherTools(cities),
    stopWhen: stepCountIs(3),
    maxRetries: 0,
  });
  let streamed = "";
  for await (const delta of result.textStream) streamed += delta;
  expect(streamed).toBe(WEATHER_ANSWER);
  expect(await result.text).toBe(WEATHER_ANSWER);
  expect(cities).toEqual(["Oslo"]);
  expect(scripted.backend.chatRequests.map((request) => request.body.stream)).toEqual([true, true]);
  expectWeatherResultSent(scripted.backend, ["user", "assistant", "tool"], "4°C in Oslo");
}

describe("AI SDK, @ai-sdk/openai default provider (Responses API)", () => {
  it("runs a tool step over POST /v1/responses and ends on the model's answer", async () => {
    const result = await generateWeatherTurn(responsesModel());
    expect(result.steps[0]?.response.id).toMatch(/^resp_/);
  });

  it("streams the same turn with streamText", async () => {
    await streamWeatherTurn(responsesModel());
  });

  it("carries an earlier turn's text with store: false, and names item_reference (the SDK's default) in a 400", async () => {
    const { backend } = scripted;
    backend.push(toolCallCompletion([{ name: "respond", args: { message: "Hello." } }]));
    const model = responsesModel();
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
    expect(sentMessages(backend, 1)).toEqual([
      { role: "user", content: "Say hello." },
      { role: "assistant", content: "Hello." },
      { role: "user", content: "Again." },
    ]);
  });
});

describe("AI SDK, @ai-sdk/openai-compatible (chat completions)", () => {
  it("runs a tool step over POST /v1/chat/completions and ends on the model's answer", async () => {
    const result = await generateWeatherTurn(compatibleModel());
    expect(result.steps[0]?.response.id).toMatch(/^chatcmpl-/);
  });

  it("streams the same turn with streamText", async () => {
    await streamWeatherTurn(compatibleModel());
  });
});
