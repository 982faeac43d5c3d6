/**
 * AnthropicClient: the real `@anthropic-ai/sdk` talking to a real local HTTP server that replays
 * the Messages API's shapes.
 *
 * Anthropic's API cannot be reached from here (no network, no key), so the replies are the
 * response and stream shapes from Anthropic's public API documentation, captured under
 * `test/fixtures/anthropic/` (see its README).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { AnthropicClient, type AnthropicClientOptions } from "../../src/clients/anthropic/client.ts";
import { BackendError, StreamError, UnsupportedModelError } from "../../src/core/errors.ts";
import { type ToolSpec, toolJsonSchema } from "../../src/core/tools.ts";
import { ChunkType, type StreamChunk } from "../../src/core/types.ts";
import { fixture, hang, json, ReplayServer, raw, sseText, unusedPort } from "./helpers/replay-server.ts";

const MESSAGES = "POST /v1/messages";
const weather: ToolSpec = {
  name: "get_weather",
  description: "Get the current weather in a given location",
  parameters: z.object({ location: z.string(), unit: z.enum(["celsius", "fahrenheit"]).optional() }),
};
const history = [
  { role: "system", content: "You are a weather bot." },
  { role: "user", content: "What is the weather like in San Francisco?" },
];

let server: ReplayServer;

beforeEach(async () => {
  server = await ReplayServer.start();
});
afterEach(async () => {
  await server.close();
});

function client(options: Partial<AnthropicClientOptions> = {}) {
  return new AnthropicClient({
    model: "claude-replay-test",
    apiKey: "test-key",
    baseURL: server.url,
    logger: () => {},
    // Retries off: each failure here is that of one attempt (test/clients/retries.test.ts has them).
    retries: 0,
    streamRetries: 0,
    ...options,
  });
}

function jsonFixture(path: string, status = 200) {
  return raw(fixture(path), { status, contentType: "application/json" });
}

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = [];
  for await (const item of stream) chunks.push(item);
  return chunks;
}

describe("send", () => {
  it("returns text and records the usage", async () => {
    server.reply(MESSAGES, jsonFixture("anthropic/message-text.json"));
    const anthropic = client();
    expect(anthropic.lastUsage).toBeNull();
    expect(await anthropic.send(history)).toEqual({ content: "Hi! My name is Claude." });
    expect(anthropic.lastUsage).toEqual({ inputTokens: 2095, outputTokens: 503 });
  });

  it("sends the converted request and reads tool_use blocks, with the text as reasoning", async () => {
    server.reply(MESSAGES, jsonFixture("anthropic/message-tool-use.json"));
    const response = await client({ toolChoice: "any", temperature: 0.2, maxTokens: 1024 }).send(history, [
      weather,
    ]);

    expect(response).toEqual([
      {
        tool: "get_weather",
        args: { location: "San Francisco, CA", unit: "celsius" },
        reasoning: "I'll check the current weather in San Francisco for you.",
      },
    ]);
    const request = server.requestsTo(MESSAGES)[0];
    // This SDK version sends the key as a bearer token.
    expect(request?.headers.authorization).toBe("Bearer test-key");
    expect(request?.json).toEqual({
      model: "claude-replay-test",
      max_tokens: 1024,
      system: "You are a weather bot.",
      messages: [
        { role: "user", content: [{ type: "text", text: "What is the weather like in San Francisco?" }] },
      ],
      tools: [
        { name: "get_weather", description: weather.description, input_schema: toolJsonSchema(weather) },
      ],
      tool_choice: { type: "any" },
      temperature: 0.2,
      stream: false,
    });
  });

  it("sends max_tokens 4096 by default and no tool_choice without tools", async () => {
    server.reply(MESSAGES, jsonFixture("anthropic/message-text.json"));
    await client({ toolChoice: "auto" }).send(history);
    const body = server.bodyOf(MESSAGES);
    expect(body.max_tokens).toBe(4096);
    expect(body).not.toHaveProperty("tool_choice");
    expect(body).not.toHaveProperty("tools");
    expect(body).not.toHaveProperty("temperature");
  });

  it("sends a call's SendOptions.toolChoice as Anthropic's tool_choice", async () => {
    server.reply(
      MESSAGES,
      jsonFixture("anthropic/message-text.json"),
      jsonFixture("anthropic/message-text.json"),
      jsonFixture("anthropic/message-text.json"),
    );
    const anthropic = client({ toolChoice: "auto" });
    await anthropic.send(history, [weather], { toolChoice: "required" });
    await anthropic.send(history, [weather], { toolChoice: { name: "get_weather" } });
    await anthropic.send(history, [weather], { toolChoice: "none" });
    expect(server.bodyOf(MESSAGES, 0).tool_choice).toEqual({ type: "any" });
    expect(server.bodyOf(MESSAGES, 1).tool_choice).toEqual({ type: "tool", name: "get_weather" });
    expect(server.bodyOf(MESSAGES, 2).tool_choice).toEqual({ type: "none" });
  });

  it("is BackendError(502) for an answer that is not a Message", async () => {
    server.reply(MESSAGES, json({ id: "msg_1", type: "message", content: "flat text" }));
    await expect(client().send(history)).rejects.toMatchObject({ name: "BackendError", statusCode: 502 });
  });
});

describe("sendStream", () => {
  it("streams text deltas and ends with the text", async () => {
    server.reply(MESSAGES, sseText(fixture("anthropic/stream-text.sse")));
    const anthropic = client();
    const chunks = await collect(anthropic.sendStream(history));
    expect(chunks).toEqual([
      { type: ChunkType.TEXT_DELTA, content: "Hello" },
      { type: ChunkType.TEXT_DELTA, content: "!" },
      { type: ChunkType.FINAL, response: { content: "Hello!" } },
    ]);
    expect(server.bodyOf(MESSAGES).stream).toBe(true);
    expect(anthropic.lastUsage).toEqual({ inputTokens: 25, outputTokens: 15 });
  });

  it("assembles input_json_delta into the tool call", async () => {
    server.reply(MESSAGES, sseText(fixture("anthropic/stream-tool-use.sse"), { intervalMs: 1 }));
    const anthropic = client();
    const chunks = await collect(anthropic.sendStream(history, [weather]));

    expect(
      chunks
        .filter((item) => item.type === ChunkType.TOOL_CALL_DELTA)
        .map((item) => item.content)
        .join(""),
    ).toBe('{"location": "San Francisco, CA", "unit": "fahrenheit"}');
    expect(chunks.at(-1)).toEqual({
      type: ChunkType.FINAL,
      response: [
        {
          tool: "get_weather",
          args: { location: "San Francisco, CA", unit: "fahrenheit" },
          reasoning: "Okay, let's check the weather for San Francisco, CA:",
        },
      ],
    });
    expect(anthropic.lastUsage).toEqual({ inputTokens: 472, outputTokens: 89 });
  });

  it("is BackendError with the status of the error type for an error event", async () => {
    server.reply(MESSAGES, sseText(fixture("anthropic/stream-error-overloaded.sse")));
    const error = await collect(client().sendStream(history)).catch((caught) => caught);
    expect(error).toBeInstanceOf(BackendError);
    expect(error).toMatchObject({ statusCode: 529, body: expect.stringContaining("overloaded_error") });
  });

  it("is StreamError when the stream ends before message_stop", async () => {
    const cut = fixture("anthropic/stream-tool-use.sse").split("event: message_delta")[0] ?? "";
    server.reply(MESSAGES, sseText(cut));
    const error = await collect(client().sendStream(history, [weather])).catch((caught) => caught);
    expect(error).toBeInstanceOf(StreamError);
    expect(error.message).toMatch(/before message_stop/);
  });

  it("is BackendError(408) when the stream stalls", async () => {
    const start = fixture("anthropic/stream-text.sse").split("event: content_block_delta")[0] ?? "";
    server.reply(MESSAGES, sseText(start, { end: "hang" }));
    await expect(collect(client({ timeoutMs: 200 }).sendStream(history))).rejects.toMatchObject({
      name: "BackendError",
      statusCode: 408,
    });
  });

  it("rethrows the abort reason mid-stream", async () => {
    server.reply(
      MESSAGES,
      sseText(fixture("anthropic/stream-text.sse").split("event: content_block_stop")[0] ?? "", {
        end: "hang",
      }),
    );
    const controller = new AbortController();
    const reason = new Error("user cancelled");
    const run = async () => {
      for await (const item of client().sendStream(history, [], { signal: controller.signal })) {
        if (item.type === ChunkType.TEXT_DELTA) controller.abort(reason);
      }
    };
    await expect(run()).rejects.toBe(reason);
  });
});

describe("errors", () => {
  it("is BackendError(529) with the API's error body, after one request (the SDK's maxRetries 0)", async () => {
    server.reply(MESSAGES, jsonFixture("anthropic/error-overloaded.json", 529));
    const error = await client()
      .send(history)
      .catch((caught) => caught);
    expect(error).toBeInstanceOf(BackendError);
    expect(error.statusCode).toBe(529);
    expect(JSON.parse(error.body)).toEqual(JSON.parse(fixture("anthropic/error-overloaded.json")));
    expect(server.requests).toHaveLength(1);
  });

  it("is BackendError(400) for an invalid request", async () => {
    server.reply(MESSAGES, jsonFixture("anthropic/error-invalid-request.json", 400));
    await expect(client().send(history)).rejects.toMatchObject({
      statusCode: 400,
      body: expect.stringContaining("roles must alternate"),
    });
  });

  it("is BackendError(408) on timeout", async () => {
    server.reply(MESSAGES, hang());
    await expect(client({ timeoutMs: 150 }).send(history)).rejects.toMatchObject({ statusCode: 408 });
  });

  it("is BackendError(503) when the API cannot be reached", async () => {
    const port = await unusedPort();
    const down = client({ baseURL: `http://127.0.0.1:${port}` });
    await expect(down.send(history)).rejects.toMatchObject({ name: "BackendError", statusCode: 503 });
  });

  it("rethrows the abort reason", async () => {
    server.reply(MESSAGES, hang());
    const controller = new AbortController();
    const reason = new Error("stop");
    setTimeout(() => controller.abort(reason), 30);
    await expect(client().send(history, [], { signal: controller.signal })).rejects.toBe(reason);
  });
});

describe("context and sampling", () => {
  it("reports a 200K context", async () => {
    expect(await client().getContextLength()).toBe(200_000);
  });

  it("refuses recommendedSampling: the map has no Claude entries", () => {
    expect(() => client({ recommendedSampling: true })).toThrow(UnsupportedModelError);
  });
});
