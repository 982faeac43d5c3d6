/**
 * The official `@anthropic-ai/sdk` client against the proxy's `/v1/messages` on 127.0.0.1, in
 * front of a scripted OpenAI-compatible backend.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { RunningProxy } from "../../src/proxy/server.ts";
import { anthropicClientFor, startTestProxy, weatherToolAnthropic } from "./helpers/proxy-fixture.ts";
import {
  type ScriptedBackend,
  startScriptedBackend,
  textCompletion,
  toolCallCompletion,
} from "./helpers/scripted-backend.ts";

let backend: ScriptedBackend;
let proxy: RunningProxy;
let client: Anthropic;

beforeAll(async () => {
  backend = await startScriptedBackend();
  proxy = await startTestProxy({ backendUrl: backend.url });
  client = anthropicClientFor(proxy);
});

afterEach(() => {
  backend.assertDone();
  backend.requests.length = 0;
});

afterAll(async () => {
  await proxy.close();
  await backend.close();
});

const ask = (content = "Weather in Paris?") => [{ role: "user" as const, content }];

describe("anthropic SDK, tools, non-streaming", () => {
  it("turns Qwen <tool_call> text into a tool_use block", async () => {
    backend.push(
      textCompletion('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'),
    );
    const message = await client.messages.create({
      model: "qwen3",
      max_tokens: 256,
      messages: ask(),
      tools: [weatherToolAnthropic],
    });
    expect(message.stop_reason).toBe("tool_use");
    const block = message.content.find((item) => item.type === "tool_use");
    expect(block).toMatchObject({ type: "tool_use", name: "get_weather", input: { city: "Paris" } });
    expect(block?.type === "tool_use" && block.id).toMatch(/^toolu_/);
  });

  it("turns fenced JSON after prose-only retries into a tool_use block", async () => {
    backend.push(
      textCompletion("I would check the weather."),
      textCompletion('```json\n{"name": "get_weather", "arguments": {"city": "Bern"}}\n```'),
    );
    const message = await client.messages.create({
      model: "qwen3",
      max_tokens: 256,
      messages: ask("Weather in Bern?"),
      tools: [weatherToolAnthropic],
    });
    expect(message.content).toEqual([
      expect.objectContaining({ type: "tool_use", name: "get_weather", input: { city: "Bern" } }),
    ]);
    expect(backend.chatRequests).toHaveLength(2);
  });

  it("returns a respond call as a text block with stop_reason end_turn", async () => {
    backend.push(toolCallCompletion([{ name: "respond", args: { message: "Sunny, 22°C." } }]));
    const message = await client.messages.create({
      model: "qwen3",
      max_tokens: 256,
      messages: ask(),
      tools: [weatherToolAnthropic],
    });
    expect(message.stop_reason).toBe("end_turn");
    expect(message.content).toEqual([{ type: "text", text: "Sunny, 22°C." }]);
  });

  it("nudges an unknown tool name and returns the corrected call", async () => {
    backend.push(
      toolCallCompletion([{ name: "weather", args: { city: "Kyiv" } }]),
      toolCallCompletion([{ name: "get_weather", args: { city: "Kyiv" } }]),
    );
    const message = await client.messages.create({
      model: "qwen3",
      max_tokens: 256,
      messages: ask("Weather in Kyiv?"),
      tools: [weatherToolAnthropic],
    });
    expect(message.content).toEqual([
      expect.objectContaining({ type: "tool_use", name: "get_weather", input: { city: "Kyiv" } }),
    ]);
    const nudge = (backend.chatRequests[1]!.body.messages as { role: string; content: string }[]).at(-1);
    expect(nudge?.content).toMatch(/^\[UnknownTool\]/);
  });

  it("translates system, tool_use/tool_result turns, stop_sequences and sampling for the backend", async () => {
    backend.push(toolCallCompletion([{ name: "respond", args: { message: "It is 22°C." } }]));
    // temperature and top_k are not in this SDK version's types; the SDK sends them as given.
    const params = {
      model: "unknown-model",
      max_tokens: 128,
      system: "Be brief.",
      temperature: 0.2,
      top_k: 30,
      stop_sequences: ["END"],
      tools: [weatherToolAnthropic],
      messages: [
        { role: "user", content: "Weather in Paris?" },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Checking." },
            { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } },
          ],
        },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "22°C" }] },
      ],
    };
    const message = await client.messages.create(params as Anthropic.MessageCreateParamsNonStreaming);
    expect(message.content).toEqual([{ type: "text", text: "It is 22°C." }]);
    const sent = backend.chatRequests[0]!.body;
    expect(sent).toMatchObject({
      model: "unknown-model",
      max_tokens: 128,
      temperature: 0.2,
      top_k: 30,
      stop: ["END"],
    });
    expect(sent.stop_sequences).toBeUndefined();
    expect(sent.system).toBeUndefined();
    const messages = sent.messages as Record<string, unknown>[];
    expect(messages.map((item) => item.role)).toEqual(["system", "user", "assistant", "tool"]);
    expect(messages[0]).toMatchObject({ content: "Be brief." });
    expect(messages[2]).toMatchObject({
      content: "Checking.",
      tool_calls: [{ id: "toolu_1", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }],
    });
    expect(messages[3]).toMatchObject({ tool_call_id: "toolu_1", name: "get_weather", content: "22°C" });
    expect(backend.chatRequests[0]?.headers["x-api-key"]).toBeUndefined();
  });
});

describe("anthropic SDK, streaming", () => {
  it("streams a tool_use block that the SDK assembles into the final message", async () => {
    backend.push(
      textCompletion('<tool_call>{"name": "get_weather", "arguments": {"city": "Quito"}}</tool_call>'),
    );
    const stream = client.messages.stream({
      model: "qwen3",
      max_tokens: 256,
      messages: ask("Weather in Quito?"),
      tools: [weatherToolAnthropic],
    });
    const events: string[] = [];
    stream.on("streamEvent", (event) => events.push(event.type));
    const message = await stream.finalMessage();
    expect(message.stop_reason).toBe("tool_use");
    expect(message.content).toEqual([
      expect.objectContaining({ type: "tool_use", name: "get_weather", input: { city: "Quito" } }),
    ]);
    expect(events[0]).toBe("message_start");
    expect(events.at(-1)).toBe("message_stop");
    expect(events).toContain("content_block_delta");
  });

  it("streams text with create({ stream: true })", async () => {
    backend.push(toolCallCompletion([{ name: "respond", args: { message: "Hi!" } }]));
    const stream = await client.messages.create({
      model: "qwen3",
      max_tokens: 64,
      messages: ask("hi"),
      tools: [weatherToolAnthropic],
      stream: true,
    });
    let text = "";
    let stopReason: string | null = null;
    for await (const event of stream) {
      if (event.type === "content_block_delta" && event.delta.type === "text_delta") text += event.delta.text;
      if (event.type === "message_delta") stopReason = event.delta.stop_reason;
    }
    expect(text).toBe("Hi!");
    expect(stopReason).toBe("end_turn");
  });
});

describe("anthropic SDK without tools", () => {
  it("answers plain text through the backend", async () => {
    backend.push(textCompletion("Plain hello."));
    const message = await client.messages.create({ model: "m", max_tokens: 32, messages: ask("hello") });
    expect(message.content).toEqual([{ type: "text", text: "Plain hello." }]);
    expect(message.stop_reason).toBe("end_turn");
    expect(backend.chatRequests[0]?.body.tools).toBeUndefined();
  });

  it("streams plain text", async () => {
    backend.push(textCompletion("Streamed hello."));
    const stream = client.messages.stream({ model: "m", max_tokens: 32, messages: ask("hello") });
    const message = await stream.finalMessage();
    expect(message.content).toEqual([expect.objectContaining({ type: "text", text: "Streamed hello." })]);
  });
});
