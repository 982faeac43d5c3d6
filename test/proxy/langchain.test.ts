/**
 * LangChain's `ChatOpenAI` (`@langchain/openai`) against the proxy on 127.0.0.1, in front of a
 * scripted chat-completions backend: on chat completions and with `useResponsesApi: true`, a
 * bound tool's call comes back as `tool_calls`, its result goes back as a `ToolMessage`, and the
 * model's answer ends the turn.
 */
import { type BaseMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { ChatOpenAI } from "@langchain/openai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  expectWeatherResultSent,
  scriptWeatherTurn,
  useScriptedProxy,
  WEATHER_ANSWER,
} from "./helpers/sdk-turn.ts";

const scripted = useScriptedProxy();

const getWeather = tool(async ({ city }: { city: string }) => `4°C in ${city}`, {
  name: "get_weather",
  description: "Current weather for a city",
  schema: z.object({ city: z.string() }),
});

/** One tool turn by hand, as LangChain users write it: invoke, run the call, invoke again. */
async function runWeatherTurn(useResponsesApi: boolean, stream: boolean) {
  scriptWeatherTurn(scripted.backend);
  const model = new ChatOpenAI({
    model: "qwen3",
    apiKey: "client-key",
    configuration: { baseURL: `${scripted.proxy.url}/v1` },
    maxRetries: 0,
    useResponsesApi,
  }).bindTools([getWeather]);
  const ask = async (messages: BaseMessage[]) => {
    if (!stream) return model.invoke(messages);
    let whole: Awaited<ReturnType<typeof model.invoke>> | undefined;
    for await (const chunk of await model.stream(messages))
      whole = whole === undefined ? chunk : whole.concat(chunk);
    if (whole === undefined) throw new Error("the stream ended without a chunk");
    return whole;
  };
  const history: BaseMessage[] = [new HumanMessage("Weather in Oslo?")];
  const first = await ask(history);
  expect(first.tool_calls).toMatchObject([{ name: "get_weather", args: { city: "Oslo" } }]);
  const call = first.tool_calls?.[0];
  if (call?.id === undefined) throw new Error("expected a tool call with an id");
  const result = await getWeather.invoke(call.args as { city: string });
  history.push(first, new ToolMessage({ tool_call_id: call.id, content: result }));
  const answer = await ask(history);
  expect(answer.text).toBe(WEATHER_ANSWER);
  expect(scripted.backend.chatRequests.map((request) => request.body.stream)).toEqual([stream, stream]);
  expectWeatherResultSent(scripted.backend, ["user", "assistant", "tool"], "4°C in Oslo");
  expect(scripted.backend.chatRequests[1]?.body.messages).toMatchObject([
    {},
    { tool_calls: [{ id: call.id }] },
    {},
  ]);
  return answer;
}

describe("LangChain ChatOpenAI through the proxy", () => {
  it("on chat completions: a bound tool's call, its ToolMessage, then the answer", async () => {
    const answer = await runWeatherTurn(false, false);
    expect(answer.tool_calls).toEqual([]);
  });

  it("on chat completions, streamed", async () => {
    await runWeatherTurn(false, true);
  });

  it("with useResponsesApi: true, over POST /v1/responses", async () => {
    const answer = await runWeatherTurn(true, false);
    expect(answer.tool_calls).toEqual([]);
    expect(answer.response_metadata.id).toMatch(/^resp_/);
  });

  it("with useResponsesApi: true, streamed", async () => {
    await runWeatherTurn(true, true);
  });
});
