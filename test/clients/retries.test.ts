/**
 * Client retries against a real local HTTP server that misbehaves on purpose: streams cut mid-call,
 * malformed or unfinished, transient 503 / 429 / dropped connections, and errors that must not be
 * retried. Each client (OpenAI-compatible, Ollama, Anthropic through its SDK) goes through the same
 * policy (src/clients/retry.ts).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { AnthropicClient } from "../../src/clients/anthropic/client.ts";
import { OllamaClient } from "../../src/clients/ollama/client.ts";
import {
  OpenAICompatibleClient,
  type OpenAICompatibleClientOptions,
} from "../../src/clients/openai/compatible-client.ts";
import { BackendError, StreamError } from "../../src/core/errors.ts";
import type { ToolSpec } from "../../src/core/tools.ts";
import { ChunkType, type StreamChunk } from "../../src/core/types.ts";
import { CHAT, chunk, completion, errorBody, tools } from "./helpers/openai-shapes.ts";
import {
  drop,
  dynamic,
  fixture,
  json,
  ndjson,
  ReplayServer,
  type Reply,
  raw,
  sse,
  sseText,
} from "./helpers/replay-server.ts";

let server: ReplayServer;

beforeEach(async () => {
  server = await ReplayServer.start();
});
afterEach(async () => {
  await server.close();
});

const history = [{ role: "user", content: "Weather in Paris?" }];

/** Backoff of a few milliseconds, so the tests time the server's Retry-After, not the jitter. */
function client(options: OpenAICompatibleClientOptions = {}) {
  return new OpenAICompatibleClient({
    baseUrl: `${server.url}/v1`,
    mode: "native",
    logger: () => {},
    retryBaseMs: 5,
    retryMaxMs: 20,
    ...options,
  });
}

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = [];
  for await (const item of stream) chunks.push(item);
  return chunks;
}

/** Collects what was streamed before the failure, and the failure. */
async function collectFailure(stream: AsyncIterable<StreamChunk>) {
  const chunks: StreamChunk[] = [];
  try {
    for await (const item of stream) chunks.push(item);
  } catch (error) {
    return { chunks, error };
  }
  throw new Error(`expected a failure, got ${JSON.stringify(chunks)}`);
}

/** A whole streamed get_weather(Paris) call, as llama-server streams it. */
const wholeCall = [
  chunk({
    tool_calls: [
      { index: 0, id: "call_a", type: "function", function: { name: "get_weather", arguments: "" } },
    ],
  }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city": ' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
  chunk({}, "tool_calls"),
  "[DONE]",
];
/** The same call, cut after half its arguments. */
const halfCall = wholeCall.slice(0, 2);
const paris = [{ tool: "get_weather", args: { city: "Paris" } }];

/** Replies that note when each request arrived. */
function timed(times: number[], reply: Reply): Reply {
  return dynamic(() => {
    times.push(performance.now());
    return reply;
  });
}

describe("OpenAICompatibleClient stream retries", () => {
  it("retries a stream cut mid-tool-call: RETRY, then the whole answer", async () => {
    server.reply(CHAT, sse(halfCall, { end: "drop" }), sse(wholeCall));
    const chunks = await collect(client().sendStream(history, tools));

    const types = chunks.map((item) => item.type);
    expect(types).toEqual([
      ChunkType.TOOL_CALL_DELTA,
      ChunkType.RETRY,
      ChunkType.TOOL_CALL_DELTA,
      ChunkType.TOOL_CALL_DELTA,
      ChunkType.FINAL,
    ]);
    // After the RETRY the deltas start again from the first: a UI that drops what came before
    // shows exactly the second attempt.
    const afterRetry = chunks.slice(types.indexOf(ChunkType.RETRY) + 1);
    expect(
      afterRetry.filter((item) => item.type === ChunkType.TOOL_CALL_DELTA).map((item) => item.content),
    ).toEqual(['{"city": ', '"Paris"}']);
    expect(chunks.at(-1)?.response).toEqual(paris);
    expect(server.requestsTo(CHAT)).toHaveLength(2);
    // The retry sends the same request again.
    expect(server.bodyOf(CHAT, 1)).toEqual(server.bodyOf(CHAT, 0));
  });

  it("retries a stream with malformed JSON in an event", async () => {
    server.reply(CHAT, sse([chunk({ content: "It is" }), '{"choices": [ {"delta": ']), sse(wholeCall));
    const chunks = await collect(client().sendStream(history, tools));
    expect(chunks.map((item) => item.type)).toEqual([
      ChunkType.TEXT_DELTA,
      ChunkType.RETRY,
      ChunkType.TOOL_CALL_DELTA,
      ChunkType.TOOL_CALL_DELTA,
      ChunkType.FINAL,
    ]);
    expect(chunks.at(-1)?.response).toEqual(paris);
  });

  it("retries a stream that ends without a finish_reason or [DONE]", async () => {
    server.reply(CHAT, sse(halfCall), sse(wholeCall));
    const chunks = await collect(client().sendStream(history, tools));
    expect(chunks.filter((item) => item.type === ChunkType.RETRY)).toHaveLength(1);
    expect(chunks.at(-1)?.response).toEqual(paris);
  });

  it("throws the StreamError after streamRetries when every stream breaks", async () => {
    server.reply(
      CHAT,
      sse(halfCall, { end: "drop" }),
      sse(halfCall, { end: "drop" }),
      sse(halfCall, { end: "drop" }),
    );
    const { chunks, error } = await collectFailure(client({ streamRetries: 2 }).sendStream(history, tools));
    expect(error).toBeInstanceOf(StreamError);
    expect((error as Error).message).toMatch(/cut off: the connection closed/);
    expect(chunks.filter((item) => item.type === ChunkType.RETRY)).toHaveLength(2);
    expect(chunks.some((item) => item.type === ChunkType.FINAL)).toBe(false);
    expect(server.requestsTo(CHAT)).toHaveLength(3);
  });

  it("does not retry a stream with streamRetries: 0", async () => {
    server.reply(CHAT, sse(halfCall, { end: "drop" }));
    const { chunks, error } = await collectFailure(client({ streamRetries: 0 }).sendStream(history, tools));
    expect(error).toBeInstanceOf(StreamError);
    expect(chunks.map((item) => item.type)).toEqual([ChunkType.TOOL_CALL_DELTA]);
    expect(server.requestsTo(CHAT)).toHaveLength(1);
  });

  it("retries a transient 503 before the stream, announcing it with RETRY", async () => {
    server.reply(
      CHAT,
      json(errorBody(503, "Loading model", "unavailable_error"), { status: 503 }),
      sse(wholeCall),
    );
    const chunks = await collect(client().sendStream(history, tools));
    expect(chunks[0]).toEqual({ type: ChunkType.RETRY });
    expect(chunks.at(-1)?.response).toEqual(paris);
    expect(server.requestsTo(CHAT)).toHaveLength(2);
  });

  it("stops reading when the consumer breaks off, and sends nothing more", async () => {
    server.reply(CHAT, sse(wholeCall, { intervalMs: 5 }));
    for await (const item of client().sendStream(history, tools)) {
      if (item.type === ChunkType.TOOL_CALL_DELTA) break;
    }
    expect(server.requestsTo(CHAT)).toHaveLength(1);
    server.assertDone();
  });
});

describe("OpenAICompatibleClient transient errors", () => {
  it("retries a 503 and returns the answer of the next attempt", async () => {
    server.reply(
      CHAT,
      json(errorBody(503, "Loading model", "unavailable_error"), { status: 503 }),
      json(completion({ content: "sunny" })),
    );
    expect(await client().send(history, tools)).toEqual({ content: "sunny" });
    expect(server.requestsTo(CHAT)).toHaveLength(2);
  });

  it("says each retry in the log: what failed, which retry, how long it waits", async () => {
    const lines: string[] = [];
    server.reply(CHAT, raw("Loading model", { status: 503 }), sse(halfCall, { end: "drop" }), sse(wholeCall));
    const logged = client({ logger: (line) => lines.push(line) });
    await collect(logged.sendStream(history, tools));
    expect(lines).toEqual([
      expect.stringMatching(
        /^forge-guardrails: http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions failed \(Backend returned HTTP 503: Loading model\); retry 1 of 2 in \d+ ms$/,
      ),
      expect.stringMatching(/failed \(Stream from .* was cut off: .*\); stream retry 1 of 2 in \d+ ms$/),
    ]);
  });

  it.each([502, 504])("retries a %i", async (status) => {
    server.reply(CHAT, raw("bad gateway", { status }), json(completion({ content: "ok" })));
    expect(await client().send(history, tools)).toEqual({ content: "ok" });
    expect(server.requestsTo(CHAT)).toHaveLength(2);
  });

  it("retries a connection dropped before the answer", async () => {
    server.reply(CHAT, drop(), json(completion({ content: "back" })));
    expect(await client().send(history, tools)).toEqual({ content: "back" });
    expect(server.requestsTo(CHAT)).toHaveLength(2);
  });

  it("throws the last BackendError after `retries` retries", async () => {
    const unavailable = json(errorBody(503, "Loading model", "unavailable_error"), { status: 503 });
    server.reply(CHAT, unavailable, unavailable, unavailable);
    const error = await client({ retries: 2 })
      .send(history, tools)
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BackendError);
    expect(error).toMatchObject({ statusCode: 503, body: expect.stringContaining("Loading model") });
    expect(server.requestsTo(CHAT)).toHaveLength(3);
  });

  it("waits the Retry-After of a 429 before the next attempt", async () => {
    const times: number[] = [];
    server.reply(
      CHAT,
      timed(
        times,
        raw(JSON.stringify(errorBody(429, "slow down", "rate_limit_error")), {
          status: 429,
          contentType: "application/json",
          headers: { "retry-after": "1" },
        }),
      ),
      timed(times, json(completion({ content: "now" }))),
    );
    expect(await client().send(history, tools)).toEqual({ content: "now" });
    const [first, second] = times as [number, number];
    expect(second - first).toBeGreaterThanOrEqual(990);
    expect(second - first).toBeLessThan(2_000);
  });

  it("throws at once, with retryAfterSeconds, when Retry-After is past maxRetryAfterMs", async () => {
    server.reply(
      CHAT,
      raw("busy", { status: 429, headers: { "retry-after": "120" } }),
      json(completion({ content: "never asked" })),
    );
    const started = performance.now();
    const error = await client({ maxRetryAfterMs: 30_000 })
      .send(history, tools)
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ name: "BackendError", statusCode: 429, retryAfterSeconds: 120 });
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(server.requestsTo(CHAT)).toHaveLength(1);
  });

  it.each([
    [400, errorBody(400, "Invalid request", "invalid_request_error")],
    [401, errorBody(401, "Invalid API Key", "authentication_error")],
    [404, errorBody(404, "File Not Found", "not_found_error")],
    [
      400,
      errorBody(
        400,
        "the request exceeds the available context size, try increasing it",
        "exceed_context_size_error",
      ),
    ],
  ])("never retries a %i (%j)", async (status, body) => {
    server.reply(CHAT, json(body, { status }), json(completion({ content: "never asked" })));
    const error = await client()
      .send(history, tools)
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ name: "BackendError", statusCode: status });
    expect(server.requestsTo(CHAT)).toHaveLength(1);
  });

  it("never retries a 2xx answer of the wrong shape (the client's own 502)", async () => {
    server.reply(
      CHAT,
      raw("{not json", { contentType: "application/json" }),
      json(completion({ content: "x" })),
    );
    const error = await client()
      .send(history, tools)
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ name: "BackendError", statusCode: 502 });
    expect((error as Error).message).toMatch(/Malformed JSON/);
    expect(server.requestsTo(CHAT)).toHaveLength(1);
  });

  it("stops waiting when the signal aborts during the backoff, with the abort's reason", async () => {
    server.reply(
      CHAT,
      raw("busy", { status: 503, headers: { "retry-after": "5" } }),
      json(completion({ content: "never asked" })),
    );
    const controller = new AbortController();
    const reason = new Error("user cancelled");
    setTimeout(() => controller.abort(reason), 150);
    const started = performance.now();
    const error = await client()
      .send(history, tools, { signal: controller.signal })
      .catch((caught: unknown) => caught);
    expect(error).toBe(reason);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(server.requestsTo(CHAT)).toHaveLength(1);
  });

  it("stops a stream's backoff on abort too", async () => {
    server.reply(CHAT, raw("busy", { status: 503, headers: { "retry-after": "5" } }), sse(wholeCall));
    const controller = new AbortController();
    const seen: StreamChunk[] = [];
    const run = async () => {
      for await (const item of client().sendStream(history, tools, { signal: controller.signal })) {
        seen.push(item);
        // The RETRY chunk comes before the wait: cancelling on it ends the wait.
        if (item.type === ChunkType.RETRY) controller.abort(new Error("cancelled on RETRY"));
      }
    };
    await expect(run()).rejects.toThrow("cancelled on RETRY");
    expect(seen).toEqual([{ type: ChunkType.RETRY }]);
    expect(server.requestsTo(CHAT)).toHaveLength(1);
  });
});

describe("retry options", () => {
  it("rejects a negative or fractional count, naming it", () => {
    expect(() => client({ retries: -1 })).toThrow(/retries/);
    expect(() => client({ streamRetries: 1.5 })).toThrow(/streamRetries/);
  });

  it("shows the resolved policy, defaults included", () => {
    expect(new OpenAICompatibleClient({ logger: () => {} }).retryPolicy).toEqual({
      retries: 2,
      streamRetries: 2,
      retryBaseMs: 500,
      retryMaxMs: 8_000,
      maxRetryAfterMs: 30_000,
    });
  });
});

describe("OllamaClient retries", () => {
  const OLLAMA_CHAT = "POST /api/chat";
  function ollama() {
    return new OllamaClient({
      model: "llama3.2",
      baseUrl: server.url,
      logger: () => {},
      retryBaseMs: 5,
      retryMaxMs: 20,
    });
  }
  const streamLines = fixture("ollama/chat-stream-tool-call.ndjson")
    .split("\n")
    .filter((line) => line.trim().length > 0);

  it("retries a 503, then reads the answer", async () => {
    server.reply(
      OLLAMA_CHAT,
      raw('{"error":"server busy"}', { status: 503, contentType: "application/json" }),
      raw(fixture("ollama/chat-text.json"), { contentType: "application/json" }),
    );
    const answer = await ollama().send(history, tools);
    expect(answer).toHaveProperty("content");
    expect(server.requestsTo(OLLAMA_CHAT)).toHaveLength(2);
  });

  it("retries a stream cut before its done line, with RETRY", async () => {
    server.reply(
      OLLAMA_CHAT,
      ndjson(streamLines.slice(0, 1), { end: "drop" }),
      ndjson(streamLines, { intervalMs: 1 }),
    );
    const chunks = await collect(ollama().sendStream(history, tools));
    expect(chunks.filter((item) => item.type === ChunkType.RETRY)).toHaveLength(1);
    expect(chunks.at(-1)?.type).toBe(ChunkType.FINAL);
    expect(Array.isArray(chunks.at(-1)?.response)).toBe(true);
    expect(server.requestsTo(OLLAMA_CHAT)).toHaveLength(2);
  });

  it("never retries a 404 (model not found)", async () => {
    server.reply(
      OLLAMA_CHAT,
      raw(fixture("ollama/error-model-not-found.json"), { status: 404, contentType: "application/json" }),
    );
    await expect(ollama().send(history, tools)).rejects.toMatchObject({ statusCode: 404 });
    expect(server.requestsTo(OLLAMA_CHAT)).toHaveLength(1);
  });
});

describe("AnthropicClient retries (through the real SDK, whose own retries stay off)", () => {
  const MESSAGES = "POST /v1/messages";
  const weather: ToolSpec = {
    name: "get_weather",
    description: "Get the current weather in a given location",
    parameters: z.object({ location: z.string() }),
  };
  function anthropic() {
    return new AnthropicClient({
      model: "claude-replay-test",
      apiKey: "test-key",
      baseURL: server.url,
      logger: () => {},
      retryBaseMs: 5,
      retryMaxMs: 20,
    });
  }
  const jsonFixture = (path: string, status = 200, headers?: Record<string, string>) =>
    raw(fixture(path), { status, contentType: "application/json", ...(headers && { headers }) });

  it("retries a 529 overloaded_error, then reads the answer", async () => {
    server.reply(
      MESSAGES,
      jsonFixture("anthropic/error-overloaded.json", 529),
      jsonFixture("anthropic/message-text.json"),
    );
    const answer = await anthropic().send(history);
    expect(answer).toHaveProperty("content");
    expect(server.requestsTo(MESSAGES)).toHaveLength(2);
  });

  it("retries a stream cut before message_stop, with RETRY", async () => {
    const whole = fixture("anthropic/stream-tool-use.sse");
    const cut = whole.split("event: message_delta")[0] ?? "";
    server.reply(MESSAGES, sseText(cut), sseText(whole));
    const chunks = await collect(anthropic().sendStream(history, [weather]));
    expect(chunks.filter((item) => item.type === ChunkType.RETRY)).toHaveLength(1);
    const final = chunks.at(-1);
    expect(final?.type).toBe(ChunkType.FINAL);
    expect(Array.isArray(final?.response)).toBe(true);
    expect(server.requestsTo(MESSAGES)).toHaveLength(2);
  });

  it("never retries a 400 invalid_request_error", async () => {
    server.reply(MESSAGES, jsonFixture("anthropic/error-invalid-request.json", 400));
    await expect(anthropic().send(history)).rejects.toMatchObject({ statusCode: 400 });
    expect(server.requestsTo(MESSAGES)).toHaveLength(1);
  });
});

describe("per-call sampling", () => {
  it("merges SendOptions.sampling over the configured sampling for that call only", async () => {
    server.reply(CHAT, json(completion({ content: "a" })), json(completion({ content: "b" })));
    const configured = client({ temperature: 0.7, topP: 0.8, maxTokens: 64 });
    await configured.send(history, tools, { sampling: { temperature: 0, seed: 7, topK: undefined } });
    await configured.send(history, tools);
    expect(server.bodyOf(CHAT, 0)).toMatchObject({ temperature: 0, top_p: 0.8, max_tokens: 64, seed: 7 });
    expect(server.bodyOf(CHAT, 0)).not.toHaveProperty("top_k");
    expect(server.bodyOf(CHAT, 1)).toMatchObject({ temperature: 0.7, top_p: 0.8, max_tokens: 64 });
    expect(server.bodyOf(CHAT, 1)).not.toHaveProperty("seed");
  });

  it("applies to streams, Ollama's options and Anthropic's parameters", async () => {
    server.reply(CHAT, sse(wholeCall));
    await collect(
      client({ temperature: 0.7 }).sendStream(history, tools, { sampling: { temperature: 0.1 } }),
    );
    expect(server.bodyOf(CHAT)).toMatchObject({ temperature: 0.1, stream: true });

    server.reply(
      "POST /api/chat",
      raw(fixture("ollama/chat-text.json"), { contentType: "application/json" }),
    );
    await new OllamaClient({
      model: "llama3.2",
      baseUrl: server.url,
      logger: () => {},
      temperature: 0.7,
      maxTokens: 9,
    }).send(history, [], { sampling: { temperature: 0, maxTokens: 32 } });
    expect(server.bodyOf("POST /api/chat").options).toEqual({ temperature: 0, num_predict: 32 });

    server.reply(
      "POST /v1/messages",
      raw(fixture("anthropic/message-text.json"), { contentType: "application/json" }),
    );
    await new AnthropicClient({
      model: "claude-replay-test",
      apiKey: "test-key",
      baseURL: server.url,
      logger: () => {},
      temperature: 0.7,
    }).send(history, [], { sampling: { temperature: 0.2, maxTokens: 100 } });
    expect(server.bodyOf("POST /v1/messages")).toMatchObject({ temperature: 0.2, max_tokens: 100 });
  });
});
