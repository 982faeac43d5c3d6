/**
 * OpenAICompatibleClient.sendStream against a real local HTTP server replaying llama-server's SSE
 * shapes (`data: {chat.completion.chunk}` events, then `data: [DONE]`).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OpenAICompatibleClient } from "../../src/clients/openai/compatible-client.ts";
import { BackendError, StreamError } from "../../src/core/errors.ts";
import { ChunkType, type StreamChunk } from "../../src/core/types.ts";
import { CHAT, chunk, errorBody, tools } from "./helpers/openai-shapes.ts";
import { json, ReplayServer, sse } from "./helpers/replay-server.ts";

let server: ReplayServer;

beforeEach(async () => {
  server = await ReplayServer.start();
});
afterEach(async () => {
  await server.close();
});

function client(options: ConstructorParameters<typeof OpenAICompatibleClient>[0] = {}) {
  // Retries off: each failure here is that of one attempt (test/clients/retries.test.ts has them).
  return new OpenAICompatibleClient({
    baseUrl: `${server.url}/v1`,
    logger: () => {},
    retries: 0,
    streamRetries: 0,
    ...options,
  });
}

const history = [{ role: "user", content: "Weather in Paris and Rome?" }];

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = [];
  for await (const item of stream) chunks.push(item);
  return chunks;
}

describe("sendStream", () => {
  it("passes on text deltas and ends with the assembled text", async () => {
    server.reply(
      CHAT,
      sse([
        chunk({ role: "assistant", content: null }),
        chunk({ content: "It is " }),
        chunk({ content: "sunny." }),
        chunk({}, "stop"),
        "[DONE]",
      ]),
    );
    const chunks = await collect(client({ mode: "native" }).sendStream(history, tools));

    expect(chunks).toEqual([
      { type: ChunkType.TEXT_DELTA, content: "It is " },
      { type: ChunkType.TEXT_DELTA, content: "sunny." },
      { type: ChunkType.FINAL, response: { content: "It is sunny." } },
    ]);
    expect(server.bodyOf(CHAT).stream).toBe(true);
  });

  it("assembles interleaved tool-call deltas by index", async () => {
    server.reply(
      CHAT,
      sse(
        [
          chunk({ reasoning_content: "Two cities, " }),
          chunk({ reasoning_content: "two calls." }),
          chunk({
            tool_calls: [
              { index: 0, id: "call_a", type: "function", function: { name: "get_weather", arguments: "" } },
            ],
          }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city": ' } }] }),
          chunk({
            tool_calls: [
              {
                index: 1,
                id: "call_b",
                type: "function",
                function: { name: "get_weather", arguments: '{"ci' },
              },
            ],
          }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
          chunk({ tool_calls: [{ index: 1, function: { arguments: 'ty": "Rome"}' } }] }),
          chunk({}, "tool_calls"),
          "[DONE]",
        ],
        { intervalMs: 2 },
      ),
    );
    const chunks = await collect(client({ mode: "native" }).sendStream(history, tools));

    expect(
      chunks.filter((item) => item.type === ChunkType.TOOL_CALL_DELTA).map((item) => item.content),
    ).toEqual(['{"city": ', '{"ci', '"Paris"}', 'ty": "Rome"}']);
    expect(chunks.at(-1)).toEqual({
      type: ChunkType.FINAL,
      response: [
        { tool: "get_weather", args: { city: "Paris" }, reasoning: "Two cities, two calls." },
        { tool: "get_weather", args: { city: "Rome" } },
      ],
    });
    expect(chunks.filter((item) => item.type === ChunkType.FINAL)).toHaveLength(1);
  });

  it("assembles deltas that carry no index (a new id starts a new call)", async () => {
    server.reply(
      CHAT,
      sse([
        chunk({ tool_calls: [{ id: "a", function: { name: "get_weather", arguments: '{"city":' } }] }),
        chunk({ tool_calls: [{ function: { arguments: '"Oslo"}' } }] }),
        chunk({
          tool_calls: [{ id: "b", function: { name: "report_weather", arguments: '{"text":"cold"}' } }],
        }),
        chunk({}, "tool_calls"),
        "[DONE]",
      ]),
    );
    const chunks = await collect(client({ mode: "native" }).sendStream(history, tools));
    expect(chunks.at(-1)?.response).toEqual([
      { tool: "get_weather", args: { city: "Oslo" } },
      { tool: "report_weather", args: { text: "cold" } },
    ]);
  });

  it("extracts the call from streamed text in prompt mode", async () => {
    server.reply(
      CHAT,
      sse([
        chunk({ content: '{"tool": "get_weather", ' }),
        chunk({ content: '"args": {"city": "Paris"}}' }),
        chunk({}, "stop"),
        "[DONE]",
      ]),
    );
    const chunks = await collect(client({ mode: "prompt" }).sendStream(history, tools));
    expect(chunks.map((item) => item.type)).toEqual([
      ChunkType.TEXT_DELTA,
      ChunkType.TEXT_DELTA,
      ChunkType.FINAL,
    ]);
    expect(chunks.at(-1)?.response).toEqual([{ tool: "get_weather", args: { city: "Paris" } }]);
    expect(server.bodyOf(CHAT)).not.toHaveProperty("tools");
  });

  it("accepts a stream that ends after its finish_reason without [DONE]", async () => {
    server.reply(CHAT, sse([chunk({ content: "done" }), chunk({}, "stop")]));
    const chunks = await collect(client({ mode: "native" }).sendStream(history, tools));
    expect(chunks.at(-1)).toEqual({ type: ChunkType.FINAL, response: { content: "done" } });
  });

  it("falls back to prompt mode in auto when the streamed request is rejected", async () => {
    server.reply(
      CHAT,
      json(errorBody(500, "tools param requires --jinja flag"), { status: 500 }),
      sse([
        chunk({ content: '{"tool": "get_weather", "args": {"city": "Paris"}}' }),
        chunk({}, "stop"),
        "[DONE]",
      ]),
    );
    const auto = client();
    const chunks = await collect(auto.sendStream(history, tools));
    expect(auto.resolvedMode).toBe("prompt");
    expect(chunks.at(-1)?.response).toEqual([{ tool: "get_weather", args: { city: "Paris" } }]);
  });

  it("rescues a 'Failed to parse input' error event", async () => {
    const message =
      'Failed to parse input at pos 5: <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>';
    server.reply(CHAT, sse([chunk({ content: "<tool_call>" }), errorBody(500, message)]));
    const chunks = await collect(client({ mode: "native" }).sendStream(history, tools));
    expect(chunks.at(-1)).toEqual({
      type: ChunkType.FINAL,
      response: [{ tool: "get_weather", args: { city: "Paris" } }],
    });
  });

  it("rescues a 'Failed to parse input' HTTP 500 before the stream", async () => {
    const message = 'Failed to parse input at pos 0: {"name": "get_weather", "arguments": {"city": "Lima"}}';
    server.reply(CHAT, json(errorBody(500, message), { status: 500 }));
    const chunks = await collect(client({ mode: "native" }).sendStream(history, tools));
    expect(chunks).toEqual([
      { type: ChunkType.FINAL, response: [{ tool: "get_weather", args: { city: "Lima" } }] },
    ]);
  });
});

describe("sendStream failures", () => {
  it("throws StreamError when the stream ends without [DONE] or a finish_reason", async () => {
    server.reply(CHAT, sse([chunk({ content: "It is " }), chunk({ content: "sun" })]));
    const seen: StreamChunk[] = [];
    const run = async () => {
      for await (const item of client({ mode: "native" }).sendStream(history, tools)) seen.push(item);
    };
    const error = await run().catch((caught) => caught);
    expect(error).toBeInstanceOf(StreamError);
    expect(error.message).toMatch(/without \[DONE\] or a finish_reason after 2 events/);
    expect(seen.map((item) => item.type)).toEqual([ChunkType.TEXT_DELTA, ChunkType.TEXT_DELTA]);
  });

  it("throws StreamError when the connection drops mid-stream", async () => {
    server.reply(CHAT, sse([chunk({ content: "It is " })], { end: "drop" }));
    const error = await collect(client({ mode: "native" }).sendStream(history, tools)).catch(
      (caught) => caught,
    );
    expect(error).toBeInstanceOf(StreamError);
    expect(error.message).toMatch(/cut off: the connection closed/);
  });

  it("throws StreamError naming the malformed event", async () => {
    server.reply(CHAT, sse([chunk({ content: "ok" }), '{"choices": [ {"delta": ']));
    const error = await collect(client({ mode: "native" }).sendStream(history, tools)).catch(
      (caught) => caught,
    );
    expect(error).toBeInstanceOf(StreamError);
    expect(error.message).toMatch(/Malformed JSON/);
    expect(error.message).toContain('{"choices": [ {"delta":');
  });

  it("throws StreamError for an event that is JSON but not a chunk", async () => {
    server.reply(CHAT, sse([{ choices: "nope" }]));
    await expect(collect(client({ mode: "native" }).sendStream(history, tools))).rejects.toThrow(
      /Unexpected event shape/,
    );
  });

  it("throws BackendError for an error event, keeping it as the body", async () => {
    server.reply(CHAT, sse([chunk({ content: "a" }), errorBody(500, "slot unavailable")]));
    const error = await collect(client({ mode: "native" }).sendStream(history, tools)).catch(
      (caught) => caught,
    );
    expect(error).toBeInstanceOf(BackendError);
    expect(error).toMatchObject({ statusCode: 500, body: expect.stringContaining("slot unavailable") });
  });

  it("throws BackendError for an HTTP error before the stream", async () => {
    server.reply(CHAT, json(errorBody(503, "Loading model", "unavailable_error"), { status: 503 }));
    await expect(collect(client({ mode: "native" }).sendStream(history, tools))).rejects.toMatchObject({
      statusCode: 503,
      body: expect.stringContaining("Loading model"),
    });
  });

  it("times out with BackendError(408) when the stream stalls", async () => {
    server.reply(CHAT, sse([chunk({ content: "It is " })], { end: "hang" }));
    const seen: StreamChunk[] = [];
    const run = async () => {
      for await (const item of client({ mode: "native", timeoutMs: 150 }).sendStream(history, tools))
        seen.push(item);
    };
    await expect(run()).rejects.toMatchObject({ name: "BackendError", statusCode: 408 });
    expect(seen).toEqual([{ type: ChunkType.TEXT_DELTA, content: "It is " }]);
  });

  it("keeps a slow stream alive as long as each event arrives within the timeout", async () => {
    server.reply(
      CHAT,
      sse(
        [
          chunk({ content: "a" }),
          chunk({ content: "b" }),
          chunk({ content: "c" }),
          chunk({}, "stop"),
          "[DONE]",
        ],
        {
          intervalMs: 80,
        },
      ),
    );
    const chunks = await collect(client({ mode: "native", timeoutMs: 200 }).sendStream(history, tools));
    expect(chunks.at(-1)).toEqual({ type: ChunkType.FINAL, response: { content: "abc" } });
  });

  it("rethrows the abort reason when the caller aborts mid-stream", async () => {
    server.reply(CHAT, sse([chunk({ content: "It is " })], { end: "hang" }));
    const controller = new AbortController();
    const reason = new Error("user cancelled");
    const run = async () => {
      for await (const item of client({ mode: "native" }).sendStream(history, tools, {
        signal: controller.signal,
      })) {
        if (item.type === ChunkType.TEXT_DELTA) controller.abort(reason);
      }
    };
    await expect(run()).rejects.toBe(reason);
  });

  it("releases the connection when the consumer stops early", async () => {
    server.reply(CHAT, sse([chunk({ content: "a" }), chunk({ content: "b" })], { end: "hang" }));
    for await (const item of client({ mode: "native" }).sendStream(history, tools)) {
      expect(item).toEqual({ type: ChunkType.TEXT_DELTA, content: "a" });
      break;
    }
    // The server sees the connection close; a leaked one would leave this waiting until the test times out.
    await server.requests[0]?.closed;
  });
});

describe("sendStream connections", () => {
  const answer = () =>
    sse([chunk({ content: "hi" }), chunk({}, "stop"), "[DONE]"], {
      // The body ends a moment after [DONE], in its own write: the client has stopped reading by then.
      intervalMs: 20,
    });

  it("hands the connection back after [DONE], so the next request reuses it", async () => {
    server.reply(CHAT, answer(), answer());
    const streaming = client({ mode: "native" });
    await collect(streaming.sendStream(history, tools));
    await server.requests[0]?.closed;
    // Loopback: the end of the body reaches the client within a few event-loop turns.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const chunks = await collect(streaming.sendStream(history, tools));

    expect(chunks.at(-1)).toEqual({ type: ChunkType.FINAL, response: { content: "hi" } });
    expect(server.requests).toHaveLength(2);
    expect(server.connections).toBe(1);
  });

  it("cuts a connection the server keeps open after [DONE]", async () => {
    server.reply(CHAT, sse([chunk({ content: "hi" }), chunk({}, "stop"), "[DONE]"], { end: "hang" }));
    const chunks = await collect(client({ mode: "native" }).sendStream(history, tools));
    expect(chunks.at(-1)).toEqual({ type: ChunkType.FINAL, response: { content: "hi" } });
    // Closed by the client within its grace period; a leaked connection would time the test out.
    await server.requests[0]?.closed;
  });
});
