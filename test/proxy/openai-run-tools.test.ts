/**
 * The official `openai` client's tool runner (`client.chat.completions.runTools`) against the
 * proxy on 127.0.0.1, in front of a scripted chat-completions backend: the runner runs the call
 * the proxy returned (rescued from text), sends its result back, and ends on the model's answer,
 * plain and streamed.
 */
import { describe, expect, it } from "vitest";
import { openAIClientFor } from "./helpers/proxy-fixture.ts";
import {
  expectWeatherResultSent,
  scriptWeatherTurn,
  useScriptedProxy,
  WEATHER_ANSWER,
} from "./helpers/sdk-turn.ts";

const scripted = useScriptedProxy();

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

/** The second request carried the call and its result; the first offered the tool and respond. */
function expectTurnSent(): void {
  const { backend } = scripted;
  expectWeatherResultSent(backend, ["user", "assistant", "tool"], "4°C in Oslo");
  const firstTools = backend.chatRequests[0]?.body.tools as { function: { name: string } }[];
  expect(firstTools.map((tool) => tool.function.name)).toEqual(["get_weather", "respond"]);
}

describe("openai SDK, chat.completions.runTools", () => {
  it("runs the rescued call, sends its result back and ends on the model's answer", async () => {
    scriptWeatherTurn(scripted.backend);
    const calls: { city: string }[] = [];
    const runner = openAIClientFor(scripted.proxy).chat.completions.runTools({
      model: "qwen3",
      messages: [{ role: "user", content: "Weather in Oslo?" }],
      tools: [weatherTool(calls)],
    });
    expect(await runner.finalContent()).toBe(WEATHER_ANSWER);
    expect(calls).toEqual([{ city: "Oslo" }]);
    expect(runner.messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
    ]);
    expect(scripted.backend.chatRequests).toHaveLength(2);
    expectTurnSent();
  });

  it("does the same streamed, the runner assembling the call and the answer from chunks", async () => {
    scriptWeatherTurn(scripted.backend);
    const calls: { city: string }[] = [];
    const runner = openAIClientFor(scripted.proxy).chat.completions.runTools({
      model: "qwen3",
      stream: true,
      messages: [{ role: "user", content: "Weather in Oslo?" }],
      tools: [weatherTool(calls)],
    });
    let streamed = "";
    runner.on("content", (delta) => {
      streamed += delta;
    });
    expect(await runner.finalContent()).toBe(WEATHER_ANSWER);
    expect(streamed).toBe(WEATHER_ANSWER);
    expect(calls).toEqual([{ city: "Oslo" }]);
    expect(scripted.backend.chatRequests.map((request) => request.body.stream)).toEqual([true, true]);
    expectTurnSent();
  });
});
