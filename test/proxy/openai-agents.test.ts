/**
 * The OpenAI Agents SDK (`@openai/agents`) against the proxy on 127.0.0.1, in front of a scripted
 * chat-completions backend: its default model (the Responses API) and its chat-completions model,
 * each running the tool call the proxy returned and ending on the model's answer. Tracing is off,
 * so nothing leaves the machine.
 */
import { Agent, OpenAIProvider, Runner, tool } from "@openai/agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  expectWeatherResultSent,
  scriptWeatherTurn,
  sentMessages,
  useScriptedProxy,
  WEATHER_ANSWER,
} from "./helpers/sdk-turn.ts";

const scripted = useScriptedProxy();

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
    baseURL: `${scripted.proxy.url}/v1`,
    apiKey: "client-key",
    useResponses,
  });
  return new Runner({ modelProvider, tracingDisabled: true });
}

/** Both backend requests: the agent's instructions first; the second with the call and its result. */
function expectTurnSent(): void {
  const { backend } = scripted;
  expect(backend.chatRequests).toHaveLength(2);
  expectWeatherResultSent(backend, ["system", "user", "assistant", "tool"], "4°C in Oslo");
  expect(sentMessages(backend, 1)[0]?.content).toBe("Answer weather questions.");
}

describe("@openai/agents through the proxy", () => {
  for (const [useResponses, wire, idPattern] of [
    [true, "its default model, the Responses API", /^resp_/],
    [false, "its chat-completions model", /^chatcmpl-/],
  ] as const) {
    it(`runs an agent on ${wire} to its final output`, async () => {
      scriptWeatherTurn(scripted.backend);
      const cities: string[] = [];
      const result = await runnerFor(useResponses).run(weatherAgent(cities), "Weather in Oslo?");
      expect(result.finalOutput).toBe(WEATHER_ANSWER);
      expect(cities).toEqual(["Oslo"]);
      expect(result.rawResponses.map((response) => response.responseId)).toEqual([
        expect.stringMatching(idPattern),
        expect.stringMatching(idPattern),
      ]);
      expectTurnSent();
    });
  }

  it("streams a run on the Responses API, the text arriving as deltas", async () => {
    scriptWeatherTurn(scripted.backend);
    const cities: string[] = [];
    const stream = await runnerFor(true).run(weatherAgent(cities), "Weather in Oslo?", { stream: true });
    let streamed = "";
    for await (const event of stream) {
      if (event.type === "raw_model_stream_event" && event.data.type === "output_text_delta") {
        streamed += event.data.delta;
      }
    }
    await stream.completed;
    expect(stream.finalOutput).toBe(WEATHER_ANSWER);
    expect(streamed).toBe(WEATHER_ANSWER);
    expect(cities).toEqual(["Oslo"]);
    expect(scripted.backend.chatRequests.map((request) => request.body.stream)).toEqual([true, true]);
    expectTurnSent();
  });
});
