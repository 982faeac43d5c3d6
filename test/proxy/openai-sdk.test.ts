/**
 * The official `openai` client against the proxy on 127.0.0.1, in front of a scripted
 * OpenAI-compatible backend: whatever the model writes, the client receives clean `tool_calls`.
 */
import type OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { RunningProxy } from "../../src/proxy/server.ts";
import { openAIClientFor, startTestProxy, weatherToolOpenAI } from "./helpers/proxy-fixture.ts";
import {
  type ScriptedBackend,
  startScriptedBackend,
  streamedTextCompletion,
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

const ask = (content = "Weather in Paris?") => [{ role: "user" as const, content }];

describe("openai SDK, tools, non-streaming", () => {
  it("turns fenced JSON into tool_calls", async () => {
    backend.push(textCompletion('```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```'));
    const completion = await client.chat.completions.create({
      model: "qwen3",
      messages: ask(),
      tools: [weatherToolOpenAI],
    });
    const choice = completion.choices[0];
    expect(choice?.finish_reason).toBe("tool_calls");
    const call = choice?.message.tool_calls?.[0];
    expect(call?.type).toBe("function");
    if (call?.type !== "function") throw new Error("expected a function call");
    expect(call.function.name).toBe("get_weather");
    expect(JSON.parse(call.function.arguments)).toEqual({ city: "Paris" });
    expect(call.id).toMatch(/^call_/);
    expect(backend.chatRequests).toHaveLength(1);
  });

  it("turns Qwen <tool_call> text into tool_calls", async () => {
    backend.push(
      textCompletion('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'),
    );
    const completion = await client.chat.completions.create({
      model: "qwen3",
      messages: ask("Weather in Oslo?"),
      tools: [weatherToolOpenAI],
    });
    const call = completion.choices[0]?.message.tool_calls?.[0];
    if (call?.type !== "function") throw new Error("expected a function call");
    expect(call.function.name).toBe("get_weather");
    expect(JSON.parse(call.function.arguments)).toEqual({ city: "Oslo" });
  });

  it("nudges prose and returns the respond call as plain text with finish_reason stop", async () => {
    backend.push(
      textCompletion("Sure! Let me think about the weather."),
      toolCallCompletion([{ name: "respond", args: { message: "It is sunny in Paris." } }]),
    );
    const completion = await client.chat.completions.create({
      model: "qwen3",
      messages: ask(),
      tools: [weatherToolOpenAI],
    });
    const choice = completion.choices[0];
    expect(choice?.finish_reason).toBe("stop");
    expect(choice?.message.content).toBe("It is sunny in Paris.");
    expect(choice?.message.tool_calls ?? []).toEqual([]);
    // The second attempt carries the failed text and the retry nudge.
    const retry = backend.chatRequests[1]?.body.messages as { role: string; content: string }[];
    expect(retry.at(-2)).toMatchObject({
      role: "assistant",
      content: "Sure! Let me think about the weather.",
    });
    expect(retry.at(-1)?.role).toBe("user");
    expect(retry.at(-1)?.content).toContain("not a valid tool call");
  });

  it("rejects an unknown tool name, nudges, and returns the corrected call", async () => {
    backend.push(
      toolCallCompletion([{ name: "get_wether", args: { city: "Rome" } }]),
      toolCallCompletion([{ name: "get_weather", args: { city: "Rome" } }]),
    );
    const completion = await client.chat.completions.create({
      model: "qwen3",
      messages: ask("Weather in Rome?"),
      tools: [weatherToolOpenAI],
    });
    const calls = completion.choices[0]?.message.tool_calls ?? [];
    expect(calls).toHaveLength(1);
    const call = calls[0];
    if (call?.type !== "function") throw new Error("expected a function call");
    expect(call.function.name).toBe("get_weather");
    const nudge = (backend.chatRequests[1]!.body.messages as { role: string; content: string }[]).at(-1);
    expect(nudge?.role).toBe("tool");
    expect(nudge?.content).toMatch(/^\[UnknownTool\]/);
    expect(nudge?.content).toContain("get_wether");
  });

  it("injects respond on the wire and forwards sampling parameters and unknown fields untouched", async () => {
    backend.push(toolCallCompletion([{ name: "respond", args: { message: "hi" } }]));
    await client.chat.completions.create({
      model: "no-such-model",
      messages: ask("hello"),
      tools: [weatherToolOpenAI],
      temperature: 0.3,
      top_p: 0.8,
      max_tokens: 77,
      seed: 5,
      tool_choice: "auto",
      // @ts-expect-error: llama-server extensions, unknown to the SDK's types
      top_k: 20,
      custom_field: { nested: [1, 2] },
    });
    const sent = backend.chatRequests[0];
    expect(sent?.body).toMatchObject({
      model: "no-such-model",
      temperature: 0.3,
      top_p: 0.8,
      max_tokens: 77,
      seed: 5,
      top_k: 20,
      tool_choice: "auto",
      custom_field: { nested: [1, 2] },
      stream: false,
    });
    const toolNames = (sent!.body.tools as { function: { name: string } }[]).map(
      (tool) => tool.function.name,
    );
    expect(toolNames).toEqual(["get_weather", "respond"]);
    expect(sent?.headers.authorization).toBeUndefined();
  });

  it("carries a multi-turn history with tool results back to the backend", async () => {
    backend.push(toolCallCompletion([{ name: "respond", args: { message: "22°C and sunny." } }]));
    const completion = await client.chat.completions.create({
      model: "qwen3",
      tools: [weatherToolOpenAI],
      messages: [
        { role: "system", content: "You are helpful." },
        { role: "user", content: "Weather in Paris?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: "call_1",
              type: "function",
              function: { name: "get_weather", arguments: '{"city":"Paris"}' },
            },
          ],
        },
        { role: "tool", tool_call_id: "call_1", content: "22°C, sunny" },
      ],
    });
    expect(completion.choices[0]?.message.content).toBe("22°C and sunny.");
    const sent = backend.chatRequests[0]?.body.messages as Record<string, unknown>[];
    expect(sent.map((message) => message.role)).toEqual(["system", "user", "assistant", "tool"]);
    expect(sent[2]).toMatchObject({
      tool_calls: [
        { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
      ],
    });
    expect(sent[3]).toMatchObject({ tool_call_id: "call_1", name: "get_weather", content: "22°C, sunny" });
  });
});

describe("openai SDK, tools, streaming", () => {
  it("streams a rescued tool call as chunks ending in [DONE]", async () => {
    backend.push(
      textCompletion('<tool_call>{"name": "get_weather", "arguments": {"city": "Lima"}}</tool_call>'),
    );
    const stream = await client.chat.completions.create({
      model: "qwen3",
      messages: ask("Weather in Lima?"),
      tools: [weatherToolOpenAI],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const deltas = chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.delta));
    const call = deltas.flatMap((delta) => delta.tool_calls ?? [])[0];
    expect(call?.function?.name).toBe("get_weather");
    expect(JSON.parse(call?.function?.arguments ?? "")).toEqual({ city: "Lima" });
    const finish = chunks
      .flatMap((chunk) => chunk.choices.map((choice) => choice.finish_reason))
      .filter(Boolean);
    expect(finish).toEqual(["tool_calls"]);
    expect(chunks.at(-1)?.usage?.total_tokens).toBeGreaterThan(0);
    expect(backend.chatRequests[0]?.body.stream).toBe(true);
  });

  it("streams a respond answer that the SDK's stream helper assembles into text", async () => {
    backend.push(toolCallCompletion([{ name: "respond", args: { message: "Hello there." } }]));
    const runner = client.chat.completions.stream({
      model: "qwen3",
      messages: ask("hi"),
      tools: [weatherToolOpenAI],
    });
    const final = await runner.finalChatCompletion();
    expect(final.choices[0]?.message.content).toBe("Hello there.");
    expect(final.choices[0]?.finish_reason).toBe("stop");
    expect(final.choices[0]?.message.tool_calls ?? []).toEqual([]);
  });
});

describe("openai SDK without tools", () => {
  it("passes the request and the backend's answer through untouched", async () => {
    backend.push(textCompletion("Plain answer."));
    const completion = await client.chat.completions.create({
      model: "any-model",
      messages: ask("hello"),
      temperature: 0.1,
      // @ts-expect-error: unknown to the SDK
      mirostat: 2,
    });
    expect(completion.choices[0]?.message.content).toBe("Plain answer.");
    expect(completion.id).toMatch(/^chatcmpl-backend-/);
    expect(backend.chatRequests[0]?.body).toEqual({
      model: "any-model",
      messages: [{ role: "user", content: "hello" }],
      temperature: 0.1,
      mirostat: 2,
    });
  });

  it("pipes a streamed answer from the backend", async () => {
    backend.push(streamedTextCompletion(["Hel", "lo", "!"]));
    const stream = await client.chat.completions.create({ model: "m", messages: ask("hi"), stream: true });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    expect(text).toBe("Hello!");
    expect(backend.chatRequests[0]?.body.stream).toBe(true);
  });

  it("lists the backend's models", async () => {
    const models = await client.models.list();
    expect(models.data.map((model) => model.id)).toEqual(["scripted-model"]);
  });
});
