/**
 * LangChain's `ChatOpenAI` (`@langchain/openai`) against the proxy on 127.0.0.1, in front of a
 * scripted chat-completions backend: on chat completions and with `useResponsesApi: true`, a
 * bound tool's call comes back as `tool_calls`, its result goes back as a `ToolMessage`, and the
 * model's answer ends the turn.
 */
import { type BaseMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { ChatOpenAI } from "@langchain/openai";
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

const getWeather = tool(async ({ city }: { city: string }) => `4°C in ${city}`, {
  name: "get_weather",
  description: "Current weather for a city",
  schema: z.object({ city: z.string() }),
});

function chatModel(useResponsesApi: boolean) {
  return new ChatOpenAI({
    model: "qwen3",
    apiKey: "client-key",
    configuration: { baseURL: `${proxy.url}/v1` },
    maxRetries: 0,
    useResponsesApi,
  });
}

/** One tool turn by hand, as LangChain users write it: invoke, run the calls, invoke again. */
async function runWeatherTurn(useResponsesApi: boolean, stream: boolean) {
  backend.push(
    textCompletion('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'),
    toolCallCompletion([{ name: "respond", args: { message: "It is 4°C in Oslo." } }]),
  );
  const model = chatModel(useResponsesApi).bindTools([getWeather]);
  const ask = async (messages: BaseMessage[]) => {
    if (!stream) return model.invoke(messages);
    const chunks = await model.stream(messages);
    let whole: Awaited<ReturnType<typeof model.invoke>> | undefined;
    for await (const chunk of chunks) whole = whole === undefined ? chunk : whole.concat(chunk);
    if (whole === undefined) throw new Error("the stream ended without a chunk");
    return whole;
  };
  const history: BaseMessage[] = [new HumanMessage("Weather in Oslo?")];
  const first = await ask(history);
  expect(first.tool_calls).toMatchObject([{ name: "get_weather", args: { city: "Oslo" } }]);
  const call = first.tool_calls?.[0];
  if (call?.id === undefined) throw new Error("expected a tool call with an id");
  history.push(
    first,
    new ToolMessage({
      tool_call_id: call.id,
      content: await getWeather.invoke(call.args as { city: string }),
    }),
  );
  const answer = await ask(history);
  return { call, answer };
}

function expectToolResultSent(callId: string): void {
  const sent = backend.chatRequests[1]?.body.messages as WireMessage[];
  expect(sent.map((message) => message.role)).toEqual(["user", "assistant", "tool"]);
  expect(sent[1]?.tool_calls).toEqual([
    { id: callId, type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } },
  ]);
  expect(sent[2]).toMatchObject({ tool_call_id: callId, content: "4°C in Oslo" });
}

describe("LangChain ChatOpenAI through the proxy", () => {
  it("on chat completions: a bound tool's call, its ToolMessage, then the answer", async () => {
    const { call, answer } = await runWeatherTurn(false, false);
    expect(answer.text).toBe("It is 4°C in Oslo.");
    expect(answer.tool_calls).toEqual([]);
    expect(backend.chatRequests.map((request) => request.body.stream)).toEqual([false, false]);
    expectToolResultSent(call.id as string);
  });

  it("on chat completions, streamed", async () => {
    const { call, answer } = await runWeatherTurn(false, true);
    expect(answer.text).toBe("It is 4°C in Oslo.");
    expect(backend.chatRequests.map((request) => request.body.stream)).toEqual([true, true]);
    expectToolResultSent(call.id as string);
  });

  it("with useResponsesApi: true, over POST /v1/responses", async () => {
    const { call, answer } = await runWeatherTurn(true, false);
    expect(answer.text).toBe("It is 4°C in Oslo.");
    expect(answer.tool_calls).toEqual([]);
    expect(answer.response_metadata.id).toMatch(/^resp_/);
    expectToolResultSent(call.id as string);
  });

  it("with useResponsesApi: true, streamed", async () => {
    const { call, answer } = await runWeatherTurn(true, true);
    expect(answer.text).toBe("It is 4°C in Oslo.");
    expect(backend.chatRequests.map((request) => request.body.stream)).toEqual([true, true]);
    expectToolResultSent(call.id as string);
  });
});
