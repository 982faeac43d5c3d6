/**
 * Live text on the guarded path (ADR 014), through the real `openai` and `@anthropic-ai/sdk`
 * clients: a scripted backend that streams and then pauses mid-answer until the test has seen the
 * first text delta, so a proxy that waited for the whole answer fails here.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type Anthropic from "@anthropic-ai/sdk";
import type OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { RunningProxy } from "../../src/proxy/server.ts";
import {
  anthropicClientFor,
  openAIClientFor,
  startTestProxy,
  weatherToolAnthropic,
  weatherToolOpenAI,
} from "./helpers/proxy-fixture.ts";
import {
  chunkEvent,
  type ScriptedBackend,
  startScriptedBackend,
  streamedPieces,
} from "./helpers/scripted-backend.ts";

let backend: ScriptedBackend;
let proxy: RunningProxy;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  backend = await startScriptedBackend();
  proxy = await startTestProxy({ backendUrl: backend.url });
  openai = openAIClientFor(proxy);
  anthropic = anthropicClientFor(proxy);
});

afterEach(() => {
  backend.assertDone();
  backend.requests.length = 0;
});

afterAll(async () => {
  await proxy.close();
  await backend.close();
});

/**
 * A backend answer that streams `before`, waits until the test calls `release` (or 3 s pass),
 * then streams `after`; `finished` tells whether the backend sent its last piece.
 */
function pausedAnswer(before: string[], after: string[]) {
  let release: () => void = () => {};
  const paused = new Promise<void>((resolve) => {
    release = resolve;
    setTimeout(resolve, 3_000);
  });
  const state = { finished: false, release: () => release() };
  async function* pieces() {
    yield* streamedPieces([...before, paused, ...after]);
    state.finished = true;
  }
  return { reply: { pieces: pieces() }, state };
}

const ask = (content = "Weather in Paris?") => [{ role: "user" as const, content }];

/** The first delta of a native `get_weather` call: its id and name, no arguments yet. */
const weatherCallStart = {
  tool_calls: [
    { index: 0, id: "call_backend_0", type: "function", function: { name: "get_weather", arguments: "" } },
  ],
};

describe("chat completions, live", () => {
  it("sends the first text delta before the backend finished its answer", async () => {
    const { reply, state } = pausedAnswer(["Hel", "lo"], [" world", "."]);
    backend.push(reply);
    const stream = await openai.chat.completions.create({
      model: "qwen3",
      messages: ask("hi"),
      tools: [weatherToolOpenAI],
      stream: true,
    });
    let text = "";
    let finishedAtFirstDelta: boolean | undefined;
    const finishes: (string | null)[] = [];
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta.content ?? "";
      if (delta.length > 0 && finishedAtFirstDelta === undefined) {
        finishedAtFirstDelta = state.finished;
        state.release();
      }
      text += delta;
      if (chunk.choices[0]?.finish_reason) finishes.push(chunk.choices[0].finish_reason);
    }
    expect(finishedAtFirstDelta).toBe(false);
    expect(text).toBe("Hello world.");
    expect(finishes).toEqual(["stop"]);
    expect(backend.chatRequests).toHaveLength(1);
    expect(backend.chatRequests[0]?.body.stream).toBe(true);
  });

  it("streams the message of a native respond call as it is generated", async () => {
    let release: () => void = () => {};
    const paused = new Promise<void>((resolve) => {
      release = resolve;
      setTimeout(resolve, 3_000);
    });
    const state = { finished: false };
    const respondStart = {
      tool_calls: [
        { index: 0, id: "call_r", type: "function", function: { name: "respond", arguments: "" } },
      ],
    };
    const args = (text: string) => ({ tool_calls: [{ index: 0, function: { arguments: text } }] });
    async function* pieces() {
      yield* streamedPieces(
        [respondStart, args('{"message": "Sun'), args("ny\\n"), paused, args('and warm."}')],
        "tool_calls",
      );
      state.finished = true;
    }
    backend.push({ pieces: pieces() });
    const stream = await openai.chat.completions.create({
      model: "qwen3",
      messages: ask("Weather?"),
      tools: [weatherToolOpenAI],
      stream: true,
    });
    let text = "";
    let finishedAtFirstDelta: boolean | undefined;
    const finishes: (string | null)[] = [];
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta.content ?? "";
      if (delta.length > 0 && finishedAtFirstDelta === undefined) {
        finishedAtFirstDelta = state.finished;
        release();
      }
      text += delta;
      expect(chunk.choices[0]?.delta.tool_calls ?? []).toEqual([]);
      if (chunk.choices[0]?.finish_reason) finishes.push(chunk.choices[0].finish_reason);
    }
    expect(finishedAtFirstDelta).toBe(false);
    expect(text).toBe("Sunny\nand warm.");
    expect(finishes).toEqual(["stop"]);
  });

  it("holds a streamed native call until it is validated, then sends it whole", async () => {
    backend.push({
      pieces: streamedPieces(
        [
          weatherCallStart,
          { tool_calls: [{ index: 0, function: { arguments: '{"city": ' } }] },
          { tool_calls: [{ index: 0, function: { arguments: '"Lima"}' } }] },
        ],
        "tool_calls",
      ),
    });
    const stream = await openai.chat.completions.create({
      model: "qwen3",
      messages: ask("Weather in Lima?"),
      tools: [weatherToolOpenAI],
      stream: true,
    });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const deltas = chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.delta));
    const calls = deltas.flatMap((delta) => delta.tool_calls ?? []);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.function?.name).toBe("get_weather");
    expect(JSON.parse(calls[0]?.function?.arguments ?? "")).toEqual({ city: "Lima" });
    expect(deltas.map((delta) => delta.content ?? "").join("")).toBe("");
  });

  it("sends text before a call live, then the rescued call", async () => {
    backend.push({
      pieces: streamedPieces([
        "Checking the ",
        "weather.\n<tool",
        '_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>',
      ]),
    });
    const stream = await openai.chat.completions.create({
      model: "qwen3",
      messages: ask("Weather in Oslo?"),
      tools: [weatherToolOpenAI],
      stream: true,
    });
    let text = "";
    const calls: OpenAI.Chat.Completions.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      calls.push(...(chunk.choices[0]?.delta.tool_calls ?? []));
    }
    expect(text).toBe("Checking the weather.\n");
    expect(calls.map((call) => call.function?.name)).toEqual(["get_weather"]);
  });

  it("never leaks the text of an attempt the guardrail nudged away", async () => {
    backend.push(
      {
        pieces: streamedPieces([
          "<tool_call>",
          '{"name": "get_forecast", "arguments": {"city": "Rome"}}',
          "</tool_call>",
        ]),
      },
      { pieces: streamedPieces(["It is ", "sunny in Rome."]) },
    );
    const stream = await openai.chat.completions.create({
      model: "qwen3",
      messages: ask("Weather in Rome?"),
      tools: [weatherToolOpenAI],
      stream: true,
    });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    expect(text).toBe("It is sunny in Rome.");
    expect(backend.chatRequests).toHaveLength(2);
  });
});

describe("Anthropic Messages, live", () => {
  it("sends the first text_delta before the backend finished its answer", async () => {
    const { reply, state } = pausedAnswer(["Bon", "jour"], [" !"]);
    backend.push(reply);
    const stream = anthropic.messages.stream({
      model: "claude-x",
      max_tokens: 256,
      messages: ask("salut"),
      tools: [weatherToolAnthropic],
    });
    let finishedAtFirstDelta: boolean | undefined;
    stream.on("text", () => {
      if (finishedAtFirstDelta !== undefined) return;
      finishedAtFirstDelta = state.finished;
      state.release();
    });
    const message = await stream.finalMessage();
    expect(finishedAtFirstDelta).toBe(false);
    expect(message.content).toMatchObject([{ type: "text", text: "Bonjour !" }]);
    expect(message.stop_reason).toBe("end_turn");
  });

  it("sends live text, then a validated tool_use block", async () => {
    backend.push({
      pieces: streamedPieces([
        "Let me look.\n",
        '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```',
      ]),
    });
    const message = await anthropic.messages
      .stream({ model: "claude-x", max_tokens: 256, messages: ask(), tools: [weatherToolAnthropic] })
      .finalMessage();
    expect(message.stop_reason).toBe("tool_use");
    expect(message.content[0]).toMatchObject({ type: "text", text: "Let me look.\n" });
    expect(message.content[1]).toMatchObject({
      type: "tool_use",
      name: "get_weather",
      input: { city: "Paris" },
    });
  });
});

describe("Responses, live", () => {
  it("sends the first output_text delta before the backend finished its answer", async () => {
    const { reply, state } = pausedAnswer(["Hi", " there"], ["!"]);
    backend.push(reply);
    const stream = openai.responses.stream({
      model: "qwen3",
      input: "hello",
      tools: [
        {
          type: "function",
          name: "get_weather",
          parameters: weatherToolOpenAI.function.parameters,
          strict: false,
        },
      ],
    });
    let finishedAtFirstDelta: boolean | undefined;
    stream.on("response.output_text.delta", () => {
      if (finishedAtFirstDelta !== undefined) return;
      finishedAtFirstDelta = state.finished;
      state.release();
    });
    const response = await stream.finalResponse();
    expect(finishedAtFirstDelta).toBe(false);
    expect(response.output_text).toBe("Hi there!");
    expect(response.status).toBe("completed");
  });
});

describe("nudges and calls on the other dialects", () => {
  it("Anthropic: a nudged attempt leaks nothing, the retry's text is the answer", async () => {
    backend.push(
      { pieces: streamedPieces(['{"name": "get_forecast", ', '"arguments": {"city": "Rome"}}']) },
      { pieces: streamedPieces(["Sunny ", "in Rome."]) },
    );
    const texts: string[] = [];
    const stream = anthropic.messages.stream({
      model: "claude-x",
      max_tokens: 256,
      messages: ask("Weather in Rome?"),
      tools: [weatherToolAnthropic],
    });
    stream.on("text", (delta) => texts.push(delta));
    const message = await stream.finalMessage();
    expect(texts.join("")).toBe("Sunny in Rome.");
    expect(message.content).toMatchObject([{ type: "text", text: "Sunny in Rome." }]);
    expect(backend.chatRequests).toHaveLength(2);
  });

  it("Responses: live text, then the validated function_call after it", async () => {
    backend.push({
      pieces: streamedPieces([
        "One moment.\n",
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Lima"}}</tool_call>',
      ]),
    });
    const response = await openai.responses
      .stream({
        model: "qwen3",
        input: "Weather in Lima?",
        tools: [
          {
            type: "function",
            name: "get_weather",
            parameters: weatherToolOpenAI.function.parameters,
            strict: false,
          },
        ],
      })
      .finalResponse();
    expect(response.output.map((item) => item.type)).toEqual(["message", "function_call"]);
    expect(response.output_text).toBe("One moment.\n");
    const call = response.output[1];
    if (call?.type !== "function_call") throw new Error("expected a function_call");
    expect(call.name).toBe("get_weather");
    expect(JSON.parse(call.arguments)).toEqual({ city: "Lima" });
  });
});

describe("a backend that stalls after live text", () => {
  it("ends the stream with an error event under --idle-timeout", async () => {
    const stalling = await startScriptedBackend();
    const guarded = await startTestProxy({ backendUrl: stalling.url, backend: { idleTimeoutMs: 300 } });
    try {
      const never = new Promise<void>((resolve) => setTimeout(resolve, 2_000));
      stalling.push({ pieces: streamedPieces(["Hello", never, " there"]) });
      const stream = await openAIClientFor(guarded).chat.completions.create({
        model: "qwen3",
        messages: ask("hi"),
        tools: [weatherToolOpenAI],
        stream: true,
      });
      let text = "";
      const failure = (async () => {
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
      })();
      await expect(failure).rejects.toThrow(/sent nothing for 300 ms/);
      expect(text).toBe("Hello");
    } finally {
      await guarded.close();
      await stalling.close();
    }
  });
});

describe("a client that leaves a live answer", () => {
  it("stops the backend's stream", async () => {
    let closed: () => void = () => {};
    const backendClosed = new Promise<void>((resolve) => {
      closed = resolve;
    });
    const server = createServer((incoming, outgoing) => {
      incoming.resume();
      incoming.on("end", () => {
        // Only the chat request streams (the proxy also asks for the context length).
        if (incoming.url !== "/v1/chat/completions") {
          outgoing.writeHead(404).end();
          return;
        }
        outgoing.writeHead(200, { "content-type": "text/event-stream" });
        outgoing.write(chunkEvent({ role: "assistant", content: "" }));
        outgoing.write(chunkEvent({ content: "Hello" }));
        // Never finishes: only the client leaving ends it.
        outgoing.on("close", () => closed());
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const guarded = await startTestProxy({ backendUrl: `http://127.0.0.1:${port}` });
    try {
      const leave = new AbortController();
      const stream = await openAIClientFor(guarded).chat.completions.create(
        { model: "qwen3", messages: ask("hi"), tools: [weatherToolOpenAI], stream: true },
        { signal: leave.signal },
      );
      let text = "";
      try {
        for await (const chunk of stream) {
          text += chunk.choices[0]?.delta.content ?? "";
          if (text.length > 0) {
            leave.abort();
          }
        }
      } catch {
        // The SDK reports the abort.
      }
      expect(text).toBe("Hello");
      const outcome = await Promise.race([
        backendClosed.then(() => "closed"),
        new Promise((resolve) => setTimeout(() => resolve("still open"), 2_000)),
      ]);
      expect(outcome).toBe("closed");
    } finally {
      await guarded.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
