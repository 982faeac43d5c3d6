/**
 * OllamaClient against a real local HTTP server replaying Ollama's wire shapes.
 *
 * Ollama itself cannot run here (no models, no network), so the replies are the response shapes
 * from Ollama's public API documentation, captured under `test/fixtures/ollama/` (see its README).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { OllamaClient, type OllamaClientOptions } from "../../src/clients/ollama/client.ts";
import { isKnownThinkingModel } from "../../src/clients/ollama/wire.ts";
import { BackendError, StreamError, ThinkingNotSupportedError } from "../../src/core/errors.ts";
import { type ToolSpec, toOpenAITool } from "../../src/core/tools.ts";
import { ChunkType, type StreamChunk } from "../../src/core/types.ts";
import { fixture, hang, json, ndjson, ReplayServer, raw, unusedPort } from "./helpers/replay-server.ts";

const CHAT = "POST /api/chat";
const weather: ToolSpec = {
  name: "get_current_weather",
  description: "Get the current weather for a location",
  parameters: z.object({ location: z.string(), format: z.enum(["celsius", "fahrenheit"]) }),
};
const tools = [weather];
const history = [{ role: "user", content: "What is the weather today in Paris?" }];

let server: ReplayServer;
let logs: string[];

beforeEach(async () => {
  server = await ReplayServer.start();
  logs = [];
});
afterEach(async () => {
  await server.close();
});

function client(options: Partial<OllamaClientOptions> = {}) {
  return new OllamaClient({
    model: "llama3.2",
    baseUrl: server.url,
    logger: (line) => logs.push(line),
    // Retries off: each failure here is that of one attempt (test/clients/retries.test.ts has them).
    retries: 0,
    streamRetries: 0,
    ...options,
  });
}

/** A captured NDJSON stream, replayed one line per write. */
function ndjsonFixture(path: string, options: Parameters<typeof ndjson>[1] = {}) {
  return ndjson(
    fixture(path)
      .split("\n")
      .filter((line) => line.trim().length > 0),
    options,
  );
}

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = [];
  for await (const item of stream) chunks.push(item);
  return chunks;
}

describe("send", () => {
  it("sends native tools and the history as it is, and parses object arguments", async () => {
    server.reply(CHAT, raw(fixture("ollama/chat-tool-call.json"), { contentType: "application/json" }));
    const ollamaHistory = [
      ...history,
      { role: "assistant", content: "", tool_calls: [{ function: { name: "x", arguments: { a: 1 } } }] },
      { role: "tool", content: "done", tool_name: "x" },
    ];
    const response = await client().send(ollamaHistory, tools);

    expect(response).toEqual([
      { tool: "get_current_weather", args: { format: "celsius", location: "Paris, FR" } },
    ]);
    const body = server.bodyOf(CHAT);
    expect(body).toMatchObject({ model: "llama3.2", stream: false, messages: ollamaHistory });
    expect(body.tools).toEqual([toOpenAITool(weather)]);
    expect(body).not.toHaveProperty("think");
    expect(body).not.toHaveProperty("options");
    server.assertDone();
  });

  it("returns text as a TextResponse", async () => {
    server.reply(CHAT, raw(fixture("ollama/chat-text.json"), { contentType: "application/json" }));
    expect(await client().send(history, tools)).toEqual({ content: "Hello! How are you today?" });
  });

  it("attaches message.thinking as the call's reasoning", async () => {
    server.reply(
      CHAT,
      raw(fixture("ollama/chat-thinking-tool-call.json"), { contentType: "application/json" }),
    );
    const [call] = (await client({ model: "qwen3" }).send(history, tools)) as { reasoning?: string }[];
    expect(call?.reasoning).toMatch(/^The user wants the weather in Toronto/);
  });

  it("discards the thinking when think is false, and says so to Ollama", async () => {
    server.reply(
      CHAT,
      raw(fixture("ollama/chat-thinking-tool-call.json"), { contentType: "application/json" }),
    );
    const response = await client({ model: "qwen3", think: false }).send(history, tools);
    expect(response).toEqual([
      { tool: "get_current_weather", args: { format: "celsius", location: "Toronto" } },
    ]);
    expect(server.bodyOf(CHAT).think).toBe(false);
  });

  it("sends sampling, num_predict, seed, num_ctx and keep_alive", async () => {
    server.reply(
      CHAT,
      json({ message: { content: "ok" }, done: true }),
      json({ message: { content: "ok" }, done: true }),
    );
    const ollama = client({
      temperature: 0.1,
      topP: 0.9,
      topK: 30,
      minP: 0.02,
      maxTokens: 128,
      seed: 3,
      keepAlive: "10m",
    });
    ollama.setNumCtx(16_384);
    await ollama.send(history);
    expect(await ollama.getContextLength()).toBe(16_384);
    ollama.setNumCtx(null);
    await ollama.send(history);
    expect(await ollama.getContextLength()).toBeNull();

    expect(server.bodyOf(CHAT, 0)).toMatchObject({
      keep_alive: "10m",
      options: {
        temperature: 0.1,
        top_p: 0.9,
        top_k: 30,
        min_p: 0.02,
        num_predict: 128,
        seed: 3,
        num_ctx: 16_384,
      },
    });
    expect(server.bodyOf(CHAT, 1).options).not.toHaveProperty("num_ctx");
  });

  it("reports the numCtx option as the context length, and null without one", async () => {
    expect(await client({ numCtx: 8192 }).getContextLength()).toBe(8192);
    expect(await client().getContextLength()).toBeNull();
  });

  it("keeps a call whose arguments are not an object, with argumentsError for the loop's tool channel", async () => {
    server.reply(
      CHAT,
      json({
        message: {
          content: "",
          tool_calls: [{ function: { name: "get_current_weather", arguments: "{bad" } }],
        },
        done: true,
      }),
    );
    expect(await client().send(history, tools)).toEqual([
      {
        tool: "get_current_weather",
        args: {},
        argumentsError: expect.stringMatching(/^invalid JSON: .*; received \{bad$/),
      },
    ]);
  });
});

describe("think", () => {
  it("sends think: true in auto mode only for models known to think", async () => {
    server.reply(
      CHAT,
      json({ message: { content: "a" }, done: true }),
      json({ message: { content: "b" }, done: true }),
    );
    await client({ model: "qwen3:8b" }).send(history);
    await client({ model: "qwen3-coder:30b" }).send(history);
    expect(server.bodyOf(CHAT, 0).think).toBe(true);
    expect(server.bodyOf(CHAT, 1)).not.toHaveProperty("think");
  });

  it("knows the thinking families", () => {
    for (const model of [
      "qwen3",
      "qwen3:8b",
      "deepseek-r1:7b",
      "qwq:32b",
      "magistral:24b",
      "gpt-oss:20b",
      "hf.co/unsloth/Qwen3-8B-GGUF:Q4_K_M",
    ]) {
      expect(isKnownThinkingModel(model), model).toBe(true);
    }
    for (const model of ["llama3.2", "qwen2.5:7b", "qwen3-coder:30b", "mistral-nemo"]) {
      expect(isKnownThinkingModel(model), model).toBe(false);
    }
  });

  it("retries once without think in auto mode when Ollama says the model does not think", async () => {
    const unsupported = raw(fixture("ollama/error-thinking-unsupported.json"), {
      status: 400,
      contentType: "application/json",
    });
    server.reply(
      CHAT,
      unsupported,
      json({ message: { content: "a" }, done: true }),
      json({ message: { content: "b" }, done: true }),
    );
    const ollama = client({ model: "qwen3:4b-instruct-2507" });

    expect(await ollama.send(history)).toEqual({ content: "a" });
    expect(await ollama.send(history)).toEqual({ content: "b" });
    const bodies = server.requestsTo(CHAT).map((request) => request.json as Record<string, unknown>);
    expect(bodies.map((body) => body.think)).toEqual([true, undefined, undefined]);
    expect(logs.filter((line) => line.includes("does not support thinking"))).toHaveLength(1);
    server.assertDone();
  });

  it("throws ThinkingNotSupportedError when think: true was asked explicitly", async () => {
    const body = fixture("ollama/error-thinking-unsupported.json");
    server.reply(CHAT, raw(body, { status: 400, contentType: "application/json" }));
    const error = await client({ think: true })
      .send(history)
      .catch((caught) => caught);
    expect(error).toBeInstanceOf(ThinkingNotSupportedError);
    expect(error).toBeInstanceOf(BackendError);
    expect(error).toMatchObject({ model: "llama3.2", statusCode: 400, body });
    expect(server.requests).toHaveLength(1);
  });
});

describe("sendStream", () => {
  it("streams text deltas and ends with the assembled text", async () => {
    server.reply(CHAT, ndjsonFixture("ollama/chat-stream-text.ndjson", { intervalMs: 2 }));
    const chunks = await collect(client().sendStream(history, tools));
    expect(chunks).toEqual([
      { type: ChunkType.TEXT_DELTA, content: "The" },
      { type: ChunkType.TEXT_DELTA, content: " sky is blue" },
      { type: ChunkType.TEXT_DELTA, content: " because of Rayleigh scattering." },
      { type: ChunkType.FINAL, response: { content: "The sky is blue because of Rayleigh scattering." } },
    ]);
    expect(server.bodyOf(CHAT).stream).toBe(true);
  });

  it("streams a tool call with <think> reasoning in the content", async () => {
    server.reply(CHAT, ndjsonFixture("ollama/chat-stream-tool-call.ndjson"));
    const chunks = await collect(client({ model: "qwen3" }).sendStream(history, tools));

    const deltas = chunks.filter((item) => item.type === ChunkType.TOOL_CALL_DELTA);
    expect(deltas).toHaveLength(1);
    expect(JSON.parse(deltas[0]?.content ?? "")).toEqual({
      name: "get_current_weather",
      arguments: { format: "celsius", location: "Toronto" },
    });
    expect(chunks.at(-1)).toEqual({
      type: ChunkType.FINAL,
      response: [
        {
          tool: "get_current_weather",
          args: { format: "celsius", location: "Toronto" },
          reasoning: "The user asks for Toronto, celsius",
        },
      ],
    });
  });

  it("gathers streamed thinking into the reasoning", async () => {
    server.reply(CHAT, ndjsonFixture("ollama/chat-stream-thinking.ndjson"));
    const chunks = await collect(client({ model: "qwen3" }).sendStream(history, tools));
    expect(chunks.at(-1)?.response).toEqual([
      {
        tool: "get_current_weather",
        args: { format: "celsius", location: "Toronto" },
        reasoning: "The user wants Toronto's weather.",
      },
    ]);
  });

  it("throws StreamError when the stream ends before its done line", async () => {
    const lines = fixture("ollama/chat-stream-text.ndjson").trim().split("\n").slice(0, 2);
    server.reply(CHAT, ndjson(lines));
    const error = await collect(client().sendStream(history, tools)).catch((caught) => caught);
    expect(error).toBeInstanceOf(StreamError);
    expect(error.message).toMatch(/"done": true line after 2 lines/);
  });

  it("throws StreamError for a malformed line", async () => {
    server.reply(CHAT, ndjson([{ message: { content: "a" }, done: false }, '{"message": {"content": "b"']));
    await expect(collect(client().sendStream(history, tools))).rejects.toThrow(/Malformed JSON/);
  });

  it("throws BackendError for an error line, keeping the line as the body", async () => {
    server.reply(
      CHAT,
      ndjson([
        { message: { content: "a" }, done: false },
        { error: "an error was encountered while running the model" },
      ]),
    );
    await expect(collect(client().sendStream(history, tools))).rejects.toMatchObject({
      name: "BackendError",
      body: expect.stringContaining("an error was encountered"),
    });
  });

  it("times out with BackendError(408) when the stream stalls", async () => {
    server.reply(CHAT, ndjson([{ message: { content: "a" }, done: false }], { end: "hang" }));
    await expect(collect(client({ timeoutMs: 150 }).sendStream(history, tools))).rejects.toMatchObject({
      statusCode: 408,
    });
  });

  it("hands the connection back after the done line, so the next request reuses it", async () => {
    // The body ends a moment after the done line, in its own write.
    const answer = () => ndjsonFixture("ollama/chat-stream-text.ndjson", { intervalMs: 20 });
    server.reply(CHAT, answer(), answer());
    const streaming = client();
    await collect(streaming.sendStream(history, tools));
    await server.requests[0]?.closed;
    // Loopback: the end of the body reaches the client within a few event-loop turns.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const chunks = await collect(streaming.sendStream(history, tools));

    expect(chunks.at(-1)).toEqual({
      type: ChunkType.FINAL,
      response: { content: "The sky is blue because of Rayleigh scattering." },
    });
    expect(server.connections).toBe(1);
  });
});

describe("errors", () => {
  it("is BackendError with Ollama's error body", async () => {
    const body = fixture("ollama/error-model-not-found.json");
    server.reply(CHAT, raw(body, { status: 404, contentType: "application/json" }));
    await expect(client({ model: "qwen9:1b" }).send(history)).rejects.toMatchObject({
      statusCode: 404,
      body,
    });
  });

  it("is BackendError(502) for a body that is not the wire shape", async () => {
    server.reply(CHAT, json({ message: { content: "no done flag" } }));
    await expect(client().send(history)).rejects.toMatchObject({ statusCode: 502 });
  });

  it("is BackendError(408) on timeout and 503 when Ollama is not running", async () => {
    server.reply(CHAT, hang());
    await expect(client({ timeoutMs: 100 }).send(history)).rejects.toMatchObject({ statusCode: 408 });
    const port = await unusedPort();
    const down = new OllamaClient({
      model: "llama3.2",
      baseUrl: `http://127.0.0.1:${port}`,
      logger: () => {},
    });
    await expect(down.send(history)).rejects.toMatchObject({
      statusCode: 503,
      body: expect.stringMatching(/ECONNREFUSED/),
    });
  });

  it("rethrows the abort reason", async () => {
    server.reply(CHAT, hang());
    const reason = new Error("stop");
    const controller = new AbortController();
    setTimeout(() => controller.abort(reason), 30);
    await expect(client().send(history, [], { signal: controller.signal })).rejects.toBe(reason);
  });
});

describe("unload", () => {
  it("posts keep_alive: 0 to /api/generate", async () => {
    server.reply(
      "POST /api/generate",
      raw(fixture("ollama/generate-unload.json"), { contentType: "application/json" }),
    );
    await client().unload();
    expect(server.bodyOf("POST /api/generate")).toEqual({ model: "llama3.2", keep_alive: 0 });
  });

  it("is BackendError when Ollama refuses", async () => {
    server.reply("POST /api/generate", raw(fixture("ollama/error-model-not-found.json"), { status: 404 }));
    await expect(client().unload()).rejects.toMatchObject({ statusCode: 404 });
  });
});
