/**
 * The OpenAI Agents SDK (`@openai/agents`) against the proxy on 127.0.0.1, in front of a scripted
 * chat-completions backend: its default model (the Responses API) and its chat-completions model,
 * each running the tool call the proxy returned and ending on the model's answer. Tracing is off,
 * so nothing leaves the machine.
 */
import { Agent, OpenAIProvider, Runner, tool } from "@openai/agents";
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

/** An agent with a weather tool that records the cities it was asked about. */
function weatherAgent(cities: string[]) {
  const getWeather = tool({
    name: "get_weather",
    description: "Current weather for a city",
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      cities.push(city);
      return `4°C in ${city}`;
    },
  });
  return new Agent({
    name: "Weather",
    instructions: "Answer weather questions.",
    model: "qwen3",
    tools: [getWeather],
  });
}

/** A runner whose models reach the proxy over the Responses API or chat completions. */
function runnerFor(useResponses: boolean): Runner {
  const modelProvider = new OpenAIProvider({
    baseURL: `${proxy.url}/v1`,
    apiKey: "client-key",
    useResponses,
  });
  return new Runner({ modelProvider, tracingDisabled: true });
}

/** Scripts a call written as Qwen `<tool_call>` text, then the final answer as a respond call. */
function scriptWeatherTurn(): void {
  backend.push(
    textCompletion('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'),
    toolCallCompletion([{ name: "respond", args: { message: "It is 4°C in Oslo." } }]),
  );
}

/** Both backend requests carried the agent's instructions; the second the call and its result. */
function expectTurnSent(): void {
  expect(backend.chatRequests).toHaveLength(2);
  const sent = backend.chatRequests[1]?.body.messages as WireMessage[];
  expect(sent.map((message) => message.role)).toEqual(["system", "user", "assistant", "tool"]);
  expect(sent[0]?.content).toBe("Answer weather questions.");
  expect(sent[2]?.tool_calls).toMatchObject([
    { type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } },
  ]);
  expect(sent[3]).toMatchObject({ role: "tool", content: "4°C in Oslo" });
}

describe("@openai/agents through the proxy", () => {
  it("runs an agent on its default model, the Responses API, to its final output", async () => {
    scriptWeatherTurn();
    const cities: string[] = [];
    const result = await runnerFor(true).run(weatherAgent(cities), "Weather in Oslo?");
    expect(result.finalOutput).toBe("It is 4°C in Oslo.");
    expect(cities).toEqual(["Oslo"]);
    expect(result.rawResponses.map((response) => response.responseId)).toEqual([
      expect.stringMatching(/^resp_/),
      expect.stringMatching(/^resp_/),
    ]);
    expectTurnSent();
  });

  it("runs the same agent on its chat-completions model", async () => {
    scriptWeatherTurn();
    const cities: string[] = [];
    const result = await runnerFor(false).run(weatherAgent(cities), "Weather in Oslo?");
    expect(result.finalOutput).toBe("It is 4°C in Oslo.");
    expect(cities).toEqual(["Oslo"]);
    expect(result.rawResponses.map((response) => response.responseId)).toEqual([
      expect.stringMatching(/^chatcmpl-/),
      expect.stringMatching(/^chatcmpl-/),
    ]);
    expectTurnSent();
  });

  it("streams a run on the Responses API, the text arriving as deltas", async () => {
    scriptWeatherTurn();
    const cities: string[] = [];
    const stream = await runnerFor(true).run(weatherAgent(cities), "Weather in Oslo?", { stream: true });
    let streamed = "";
    for await (const event of stream) {
      if (event.type === "raw_model_stream_event" && event.data.type === "output_text_delta") {
        streamed += event.data.delta;
      }
    }
    await stream.completed;
    expect(stream.finalOutput).toBe("It is 4°C in Oslo.");
    expect(streamed).toBe("It is 4°C in Oslo.");
    expect(cities).toEqual(["Oslo"]);
    expect(backend.chatRequests.map((request) => request.body.stream)).toEqual([true, true]);
    expectTurnSent();
  });
});
