/**
 * The official `@anthropic-ai/sdk` tool runner (`client.beta.messages.toolRunner`) against the
 * proxy on 127.0.0.1, in front of a scripted chat-completions backend: the runner runs the
 * `tool_use` the proxy returned (rescued from text), sends its `tool_result` back and ends on the
 * model's answer, plain and streamed. The runner threads by default (the `message-threads` beta:
 * later turns send only their new messages); the proxy refuses the thread the way the SDK recovers
 * from, and the runner sends whole conversations. (`messages.countTokens` is in
 * `claude-code.test.ts`.)
 */
import Anthropic from "@anthropic-ai/sdk";
import { betaTool } from "@anthropic-ai/sdk/helpers/beta/json-schema";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  expectWeatherResultSent,
  scriptWeatherTurn,
  sentMessages,
  useScriptedProxy,
  WEATHER_ANSWER,
} from "./helpers/sdk-turn.ts";

const scripted = useScriptedProxy();
let client: Anthropic;

beforeAll(() => {
  client = new Anthropic({
    baseURL: scripted.proxy.url,
    apiKey: "client-key",
    maxRetries: 0,
    fetch: recordingFetch(),
  });
});

afterEach(() => {
  proxyRequests = [];
});

/** A runnable weather tool that records the cities it was asked about. */
function weatherTool(cities: string[]) {
  return betaTool({
    name: "get_weather",
    description: "Current weather for a city",
    inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    run: ({ city }) => {
      cities.push(city);
      return `4°C in ${city}`;
    },
  });
}

/** The second backend request carried the system prompt, the call the runner ran and its result. */
function expectToolResultSent(): void {
  expectWeatherResultSent(scripted.backend, ["system", "user", "assistant", "tool"], "4°C in Oslo");
  expect(sentMessages(scripted.backend, 1)[0]?.content).toBe("Answer weather questions.");
}

const textOf = (message: Anthropic.Beta.BetaMessage) =>
  message.content.map((block) => (block.type === "text" ? block.text : "")).join("");

/** What reached the proxy's Messages route: its path and `thread` field, seen by a fetch wrapper. */
let proxyRequests: { path: string; thread: unknown }[] = [];

function recordingFetch(): typeof fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const body = typeof init?.body === "string" ? (JSON.parse(init.body) as { thread?: unknown }) : {};
    proxyRequests.push({ path: url.pathname, thread: body.thread });
    return fetch(input, init);
  };
}

describe("anthropic SDK, beta.messages.toolRunner", () => {
  it("runs the rescued tool_use, sends its tool_result back and ends on the model's answer", async () => {
    scriptWeatherTurn(scripted.backend);
    const cities: string[] = [];
    const final = await client.beta.messages.toolRunner({
      model: "qwen3",
      max_tokens: 512,
      system: "Answer weather questions.",
      messages: [{ role: "user", content: "Weather in Oslo?" }],
      tools: [weatherTool(cities)],
    });
    expect(textOf(final)).toBe(WEATHER_ANSWER);
    expect(final.stop_reason).toBe("end_turn");
    expect(cities).toEqual(["Oslo"]);
    expect(scripted.backend.chatRequests).toHaveLength(2);
    expectToolResultSent();
    const messagesBodies = proxyRequests.filter((request) => request.path === "/v1/messages");
    expect(messagesBodies.map((request) => request.thread)).toEqual([
      { type: "create" },
      undefined,
      undefined,
    ]);
  });

  it("does the same streamed, each turn a message stream", async () => {
    scriptWeatherTurn(scripted.backend);
    const cities: string[] = [];
    const runner = client.beta.messages.toolRunner({
      model: "qwen3",
      max_tokens: 512,
      stream: true,
      system: "Answer weather questions.",
      messages: [{ role: "user", content: "Weather in Oslo?" }],
      tools: [weatherTool(cities)],
    });
    const stopReasons: (string | null)[] = [];
    for await (const stream of runner) {
      stopReasons.push((await stream.finalMessage()).stop_reason);
    }
    expect(stopReasons).toEqual(["tool_use", "end_turn"]);
    expect(textOf(await runner.done())).toBe(WEATHER_ANSWER);
    expect(cities).toEqual(["Oslo"]);
    expect(scripted.backend.chatRequests.map((request) => request.body.stream)).toEqual([true, true]);
    expectToolResultSent();
  });
});

describe("a Messages request with a thread", () => {
  it("is a 400 naming thread, with the error_code the SDK reads, and reaches no backend", async () => {
    const response = await fetch(`${scripted.proxy.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": "client-key" },
      body: JSON.stringify({
        model: "qwen3",
        max_tokens: 64,
        thread: { type: "continue", previous_message_id: "msg_earlier" },
        messages: [{ role: "user", content: "And tomorrow?" }],
      }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { type: string; message: string; details: unknown } };
    expect(body.error.type).toBe("invalid_request_error");
    expect(body.error.message).toMatch(/^thread: the proxy is stateless/);
    expect(body.error.details).toEqual({ error_code: "thread_unsupported_request", unsupported: ["thread"] });
    expect(scripted.backend.chatRequests).toEqual([]);
  });
});
