/**
 * The official `openai` client's tool runner (`client.chat.completions.runTools`) against the
 * proxy on 127.0.0.1, in front of a scripted chat-completions backend: the runner runs the call
 * the proxy returned (rescued from text), sends its result back, and ends on the model's answer,
 * plain and streamed.
 */
import type OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { RunningProxy } from "../../src/proxy/server.ts";
import { openAIClientFor, startTestProxy } from "./helpers/proxy-fixture.ts";
import {
  type ScriptedBackend,
  startScriptedBackend,
  textCompletion,
  toolCallCompletion,
} from "./helpers/scripted-backend.ts";

let backend: ScriptedBackend;
let proxy: RunningProxy;
let client: OpenAI;

beforeAll(async () => {
  backend = await startScriptedBackend();
  proxy = await startTestProxy({ backendUrl: backend.url });
  client = openAIClientFor(proxy);
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

/** A runnable weather tool that records the arguments it was called with. */
function weatherTool(calls: { city: string }[]) {
  return {
    type: "function" as const,
    function: {
      name: "get_weather",
      description: "Current weather for a city",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      parse: (input: string) => JSON.parse(input) as { city: string },
      function: (args: { city: string }) => {
        calls.push(args);
        return `4°C in ${args.city}`;
      },
    },
  };
}

/** Scripts a call written as Qwen `<tool_call>` text, then the final answer as a respond call. */
function scriptWeatherTurn(): void {
  backend.push(
    textCompletion('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'),
    toolCallCompletion([{ name: "respond", args: { message: "It is 4°C in Oslo." } }]),
  );
}

/** What the second backend request carried: the call the runner ran and its result. */
function expectToolResultSent(): void {
  const sent = backend.chatRequests[1]?.body.messages as WireMessage[];
  expect(sent.map((message) => message.role)).toEqual(["user", "assistant", "tool"]);
  expect(sent[1]?.tool_calls).toMatchObject([
    { type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } },
  ]);
  expect(sent[2]).toMatchObject({ role: "tool", content: "4°C in Oslo" });
  const firstTools = backend.chatRequests[0]?.body.tools as { function: { name: string } }[];
  expect(firstTools.map((tool) => tool.function.name)).toEqual(["get_weather", "respond"]);
}

describe("openai SDK, chat.completions.runTools", () => {
  it("runs the rescued call, sends its result back and ends on the model's answer", async () => {
    scriptWeatherTurn();
    const calls: { city: string }[] = [];
    const runner = client.chat.completions.runTools({
      model: "qwen3",
      messages: [{ role: "user", content: "Weather in Oslo?" }],
      tools: [weatherTool(calls)],
    });
    expect(await runner.finalContent()).toBe("It is 4°C in Oslo.");
    expect(calls).toEqual([{ city: "Oslo" }]);
    expect(runner.messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
    ]);
    expect(backend.chatRequests).toHaveLength(2);
    expectToolResultSent();
  });

  it("does the same streamed, the runner assembling the call and the answer from chunks", async () => {
    scriptWeatherTurn();
    const calls: { city: string }[] = [];
    const runner = client.chat.completions.runTools({
      model: "qwen3",
      stream: true,
      messages: [{ role: "user", content: "Weather in Oslo?" }],
      tools: [weatherTool(calls)],
    });
    let streamed = "";
    runner.on("content", (delta) => {
      streamed += delta;
    });
    expect(await runner.finalContent()).toBe("It is 4°C in Oslo.");
    expect(streamed).toBe("It is 4°C in Oslo.");
    expect(calls).toEqual([{ city: "Oslo" }]);
    expect(backend.chatRequests.map((request) => request.body.stream)).toEqual([true, true]);
    expectToolResultSent();
  });
});
