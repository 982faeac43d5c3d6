/**
 * Deadlines against a backend that stalls on purpose: an answer that stops mid-body (JSON or SSE)
 * fails with 504 once the idle deadline passes, a request that outlives its total deadline fails
 * with 504 even while bytes still trickle in, each in the client's API shape (an error event once
 * a stream has begun), and under `--serialize` the next request gets the slot.
 */
import { APIError as AnthropicAPIError } from "@anthropic-ai/sdk";
import { APIError as OpenAIAPIError } from "openai";
import { afterEach, describe, expect, it } from "vitest";
import type { RunningProxy } from "../../src/proxy/server.ts";
import {
  type MisbehavingBackend,
  reply,
  sseChunk,
  stallAfter,
  startMisbehavingBackend,
  trickleForever,
} from "./helpers/misbehaving-backend.ts";
import {
  anthropicClientFor,
  openAIClientFor,
  startTestProxy,
  weatherToolAnthropic,
  weatherToolOpenAI,
} from "./helpers/proxy-fixture.ts";
import { streamedTextCompletion, textCompletion, toolCallCompletion } from "./helpers/scripted-backend.ts";

const USER = [{ role: "user" as const, content: "Weather in Paris?" }];

let backend: MisbehavingBackend | undefined;
let proxy: RunningProxy | undefined;

afterEach(async () => {
  await proxy?.close();
  await backend?.close();
  proxy = undefined;
  backend = undefined;
});

async function start(options: { idleTimeoutMs: number; deadlineMs?: number }) {
  backend = await startMisbehavingBackend();
  proxy = await startTestProxy({
    backendUrl: backend.url,
    backend: { idleTimeoutMs: options.idleTimeoutMs },
    serialize: true,
    maxRetries: 0,
    ...(options.deadlineMs !== undefined && { deadlineMs: options.deadlineMs }),
  });
  return { backend, proxy, openai: openAIClientFor(proxy), anthropic: anthropicClientFor(proxy) };
}

async function openAIFailure(promise: Promise<unknown>): Promise<OpenAIAPIError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!(error instanceof OpenAIAPIError))
    throw new Error(`expected an OpenAI APIError, got ${String(error)}`);
  return error;
}

describe("idle deadline between body reads", () => {
  it("answers 504 for a forwarded JSON body that stops mid-way, and frees the --serialize slot", async () => {
    const { backend, openai } = await start({ idleTimeoutMs: 300 });
    backend.push(stallAfter('{"id":"chatcmpl-stalled","object":"chat.comp'), reply(textCompletion("hello")));
    const error = await openAIFailure(openai.chat.completions.create({ model: "m", messages: USER }));
    expect(error.status).toBe(504);
    expect(error.code).toBe("backend_timeout");
    expect(error.message).toMatch(/sent nothing for 300 ms.*--idle-timeout/);
    await backend.cut(1);
    const next = await openai.chat.completions.create({ model: "m", messages: USER });
    expect(next.choices[0]?.message.content).toBe("hello");
  });

  it("answers 504 on the guarded path, in the OpenAI and the Anthropic shape", async () => {
    const { backend, openai, anthropic } = await start({ idleTimeoutMs: 300 });
    backend.push(
      stallAfter('{"id":"chatcmpl-stalled","choices":[{"index":0,'),
      stallAfter('{"id":"chatcmpl-stalled"'),
      reply(toolCallCompletion([{ name: "get_weather", args: { city: "Paris" } }])),
    );
    const error = await openAIFailure(
      openai.chat.completions.create({ model: "m", messages: USER, tools: [weatherToolOpenAI] }),
    );
    expect(error.status).toBe(504);
    expect(error.type).toBe("server_error");
    expect(error.message).toMatch(/--idle-timeout/);

    const anthropicError = await anthropic.messages
      .create({ model: "m", max_tokens: 64, messages: USER, tools: [weatherToolAnthropic] })
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );
    if (!(anthropicError instanceof AnthropicAPIError)) throw new Error("expected an Anthropic APIError");
    expect(anthropicError.status).toBe(504);
    expect(anthropicError.error).toMatchObject({ type: "error", error: { type: "timeout_error" } });

    const next = await openai.chat.completions.create({
      model: "m",
      messages: USER,
      tools: [weatherToolOpenAI],
    });
    expect(next.choices[0]?.message.tool_calls?.[0]).toMatchObject({ function: { name: "get_weather" } });
    await backend.cut(2);
  });

  it("ends a forwarded stream that stalls with an OpenAI error event, then serves the next request", async () => {
    const { backend, openai } = await start({ idleTimeoutMs: 300 });
    backend.push(stallAfter(sseChunk("Hel"), "text/event-stream"), reply(streamedTextCompletion(["lo"])));
    const stream = await openai.chat.completions.create({ model: "m", messages: USER, stream: true });
    const received: string[] = [];
    const error = await openAIFailure(
      (async () => {
        for await (const chunk of stream) received.push(chunk.choices[0]?.delta.content ?? "");
      })(),
    );
    expect(received).toEqual(["Hel"]);
    expect(error.message).toMatch(/sent nothing for 300 ms.*--idle-timeout/);
    await backend.cut(1);

    const next = await openai.chat.completions.create({ model: "m", messages: USER, stream: true });
    const text: string[] = [];
    for await (const chunk of next) text.push(chunk.choices[0]?.delta.content ?? "");
    expect(text.join("")).toBe("lo");
  });
});

describe("total deadline", () => {
  it("ends a stream that never stops trickling with an error event naming --deadline", async () => {
    const { backend, openai } = await start({ idleTimeoutMs: 10_000, deadlineMs: 400 });
    backend.push(trickleForever(20), reply(textCompletion("after")));
    const stream = await openai.chat.completions.create({ model: "m", messages: USER, stream: true });
    let ticks = 0;
    const error = await openAIFailure(
      (async () => {
        for await (const chunk of stream) if (chunk.choices[0]?.delta.content === "tick ") ticks += 1;
      })(),
    );
    expect(ticks).toBeGreaterThan(0);
    expect(error.message).toMatch(/within its 400 ms deadline \(--deadline\)/);
    await backend.cut(1);
    const next = await openai.chat.completions.create({ model: "m", messages: USER });
    expect(next.choices[0]?.message.content).toBe("after");
  });

  it("answers 504 on the guarded path when the backend outlives the deadline", async () => {
    const { backend, openai, anthropic } = await start({ idleTimeoutMs: 10_000, deadlineMs: 400 });
    backend.push(
      stallAfter("{"),
      stallAfter("{"),
      reply(toolCallCompletion([{ name: "get_weather", args: { city: "Paris" } }])),
    );
    const error = await openAIFailure(
      openai.chat.completions.create({ model: "m", messages: USER, tools: [weatherToolOpenAI] }),
    );
    expect(error.status).toBe(504);
    expect(error.message).toMatch(/--deadline/);
    const anthropicError = await anthropic.messages
      .create({ model: "m", max_tokens: 64, messages: USER, tools: [weatherToolAnthropic] })
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );
    if (!(anthropicError instanceof AnthropicAPIError)) throw new Error("expected an Anthropic APIError");
    expect(anthropicError.status).toBe(504);
    expect(anthropicError.error).toMatchObject({ error: { type: "timeout_error" } });
    const next = await openai.chat.completions.create({
      model: "m",
      messages: USER,
      tools: [weatherToolOpenAI],
    });
    expect(next.choices[0]?.finish_reason).toBe("tool_calls");
    await backend.cut(2);
  });
});
