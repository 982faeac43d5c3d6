/**
 * What real agents send and meet: a Claude-Code-shaped Messages request (a system turn inside
 * `messages`, `output_config`, `context_management`, an image in a tool result, `max_tokens: 32000`),
 * `count_tokens`, prose after the nudges, and malformed arguments every time; in-process
 * (`app.request()`) and with the real `@anthropic-ai/sdk` and `openai` clients, in front of a
 * scripted OpenAI-compatible backend.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { createProxy } from "../../src/proxy/app.ts";
import { createHttpBackend } from "../../src/proxy/backend/http-backend.ts";
import { IMAGE_PLACEHOLDER } from "../../src/proxy/proxy-request.ts";
import {
  anthropicClientFor,
  openAIClientFor,
  startTestProxy,
  type TestProxyOptions,
  weatherToolAnthropic,
  weatherToolOpenAI,
} from "./helpers/proxy-fixture.ts";
import {
  type BackendStep,
  type ScriptedBackend,
  type ScriptedBackendOptions,
  scriptedTokenCount,
  startScriptedBackend,
  textCompletion,
  toolCallCompletion,
} from "./helpers/scripted-backend.ts";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function scripted(
  script: BackendStep[],
  options: ScriptedBackendOptions = {},
): Promise<ScriptedBackend> {
  const backend = await startScriptedBackend(script, options);
  cleanups.push(() => backend.close());
  return backend;
}

async function proxyFor(backend: ScriptedBackend, options: Omit<TestProxyOptions, "backendUrl"> = {}) {
  const proxy = await startTestProxy({ backendUrl: backend.url, ...options });
  cleanups.push(() => proxy.close());
  return proxy;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to fail");
}

const PNG = { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" };

/** A request as Claude Code sends it (trimmed): cache_control everywhere, Anthropic-only fields, a system turn. */
const claudeCodeRequest = {
  model: "qwen3-coder",
  max_tokens: 32_000,
  system: [
    { type: "text", text: "You are Claude Code.", cache_control: { type: "ephemeral" } },
    { type: "text", text: "Be concise." },
  ],
  messages: [
    { role: "user", content: [{ type: "text", text: "What is in the screenshot?" }] },
    { role: "system", content: "The user switched to plan mode." },
    {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "I should look at it.", signature: "sig" },
        { type: "tool_use", id: "toolu_01", name: "get_weather", input: { city: "Paris" } },
      ],
    },
    {
      role: "user",
      content: [
        {
          type: "tool_result",
          tool_use_id: "toolu_01",
          content: [
            { type: "text", text: "Screenshot taken." },
            { type: "image", source: PNG },
          ],
        },
        { type: "image", source: PNG },
        { type: "text", text: "And this one?", cache_control: { type: "ephemeral" } },
      ],
    },
  ],
  tools: [
    { ...weatherToolAnthropic, cache_control: { type: "ephemeral" } },
    { type: "web_search_20250305", name: "web_search", max_uses: 8 },
  ],
  tool_choice: { type: "auto" },
  thinking: { type: "enabled", budget_tokens: 4000 },
  metadata: { user_id: "user_abc" },
  output_config: { effort: "high" },
  context_management: { edits: [{ type: "clear_tool_uses_20250919" }] },
  temperature: 1,
  stream: false,
};

const DROPPED = ["output_config", "context_management", "thinking", "metadata", "system", "betas"];

function expectClaudeCodeTranslation(sent: Record<string, unknown>): void {
  for (const field of DROPPED) expect(sent[field], field).toBeUndefined();
  const messages = sent.messages as { role: string; content: string }[];
  expect(messages.map((message) => message.role)).toEqual([
    "system",
    "user",
    "system",
    "assistant",
    "tool",
    "user",
  ]);
  expect(messages[0]?.content).toBe("You are Claude Code.\nBe concise.");
  expect(messages[2]?.content).toBe("The user switched to plan mode.");
  expect(messages[4]?.content).toBe(`Screenshot taken.\n${IMAGE_PLACEHOLDER}`);
  expect(messages[5]?.content).toBe(`${IMAGE_PLACEHOLDER}\nAnd this one?`);
  expect(JSON.stringify(sent)).not.toContain("cache_control");
  // The server tool (web search) runs at Anthropic only: dropped.
  const tools = sent.tools as { function: { name: string } }[];
  expect(tools.map((tool) => tool.function.name)).toEqual(["get_weather", "respond"]);
  // 4096-token window: the 32,000 asked for is clamped to what the prompt leaves.
  expect(sent.max_tokens).toBeGreaterThan(3000);
  expect(sent.max_tokens).toBeLessThan(4096);
}

describe("a Claude-Code-shaped Messages request", () => {
  it("is served in-process: system turn in place, images as placeholders, Anthropic-only fields dropped", async () => {
    const backend = await scripted([toolCallCompletion([{ name: "respond", args: { message: "Sunny." } }])]);
    const app = createProxy({ backend: createHttpBackend({ url: backend.url, toolMode: "native" }) });
    const response = await app.request("/v1/messages", {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify(claudeCodeRequest),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ content: [{ type: "text", text: "Sunny." }] });
    expectClaudeCodeTranslation(backend.chatRequests[0]!.body);
    backend.assertDone();
  });

  it("is served to the Anthropic SDK, streamed, and logs the images it omitted", async () => {
    const backend = await scripted([toolCallCompletion([{ name: "get_weather", args: { city: "Oslo" } }])]);
    const lines: string[] = [];
    const proxy = await proxyFor(backend, {
      accessLog: { format: "json", write: (line) => lines.push(line) },
    });
    const message = await anthropicClientFor(proxy)
      .messages.stream({ ...claudeCodeRequest, stream: true } as unknown as Anthropic.MessageStreamParams)
      .finalMessage();
    expect(message.stop_reason).toBe("tool_use");
    expect(message.content).toEqual([
      expect.objectContaining({ type: "tool_use", name: "get_weather", input: { city: "Oslo" } }),
    ]);
    expectClaudeCodeTranslation(backend.chatRequests[0]!.body);
    await expect.poll(() => lines.length).toBe(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ status: 200, images_omitted: 2, guardrail: null });
  });

  it("still refuses a client tool without input_schema, naming it", async () => {
    const backend = await scripted([]);
    const app = createProxy({ backend: createHttpBackend({ url: backend.url }) });
    const response = await app.request("/v1/messages", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        max_tokens: 16,
        messages: [{ role: "user", content: "hi" }],
        tools: [{ name: "get_weather" }],
      }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      error: { message: expect.stringContaining("tools[0].input_schema") },
    });
  });

  it("still refuses a block type it cannot turn into text, naming it", async () => {
    const backend = await scripted([]);
    const proxy = await proxyFor(backend);
    const error = await rejection(
      anthropicClientFor(proxy).messages.create({
        model: "m",
        max_tokens: 16,
        tools: [weatherToolAnthropic],
        messages: [{ role: "user", content: [{ type: "document", source: { type: "text", data: "x" } }] }],
      } as unknown as Anthropic.MessageCreateParamsNonStreaming),
    );
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect((error as Error).message).toContain("messages[0].content[0].type");
  });
});

describe("POST /v1/messages/count_tokens", () => {
  const countParams = {
    model: "m",
    system: "Be brief.",
    messages: [
      { role: "user" as const, content: "Weather in Paris?" },
      { role: "system" as const, content: "Answer in French." },
    ],
    tools: [weatherToolAnthropic],
  };

  it("counts exactly through a backend with a tokenizer, tools and the injected respond tool included", async () => {
    const backend = await scripted([], { tokenizer: true });
    const proxy = await proxyFor(backend);
    const { data, response } = await anthropicClientFor(proxy)
      .messages.countTokens(countParams as unknown as Anthropic.MessageCountTokensParams)
      .withResponse();
    expect(response.headers.get("x-forge-token-count")).toBe("exact");
    const rendered = backend.requests.find((request) => request.path === "/apply-template");
    if (!rendered) throw new Error("the proxy did not render the prompt");
    const names = (rendered.body.tools as { function: { name: string } }[]).map((tool) => tool.function.name);
    expect(names).toEqual(["get_weather", "respond"]);
    expect((rendered.body.messages as { role: string }[]).map((message) => message.role)).toEqual([
      "system",
      "user",
      "system",
    ]);
    const tokenized = backend.requests.find((request) => request.path === "/tokenize");
    expect(data.input_tokens).toBe(scriptedTokenCount(String(tokenized?.body.content)));
    expect(backend.chatRequests).toHaveLength(0);
  });

  it("estimates on a backend without one, and says so; also at /messages/count_tokens", async () => {
    const backend = await scripted([]);
    const proxy = await proxyFor(backend);
    const { data, response } = await anthropicClientFor(proxy)
      .messages.countTokens(countParams as unknown as Anthropic.MessageCountTokensParams)
      .withResponse();
    expect(response.headers.get("x-forge-token-count")).toBe("estimate");
    expect(data.input_tokens).toBeGreaterThan(20);
    expect(data.input_tokens).toBeLessThan(1000);
    const app = createProxy({ backend: createHttpBackend({ url: backend.url }) });
    const bare = await app.request("/messages/count_tokens", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: "hi" }] }),
    });
    expect(bare.status).toBe(200);
    expect(bare.headers.get("x-forge-token-count")).toBe("estimate");
    expect(await bare.json()).toEqual({ input_tokens: expect.any(Number) });
    const invalid = await app.request("/messages/count_tokens", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [] }),
    });
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
  });
});

describe("a model that keeps answering prose after the nudges", () => {
  it("gets its prose returned with x-forge-guardrail: gave-up, on both routes, logged as such", async () => {
    const backend = await scripted([]);
    const lines: string[] = [];
    const proxy = await proxyFor(backend, {
      maxRetries: 1,
      accessLog: { format: "json", write: (line) => lines.push(line) },
    });
    backend.push(textCompletion("I think it is sunny."), textCompletion("It is sunny in Paris."));
    const { data: completion, response } = await openAIClientFor(proxy)
      .chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: "Weather in Paris?" }],
        tools: [weatherToolOpenAI],
      })
      .withResponse();
    expect(response.status).toBe(200);
    expect(response.headers.get("x-forge-guardrail")).toBe("gave-up");
    expect(completion.choices[0]?.message).toMatchObject({ content: "It is sunny in Paris." });
    expect(completion.choices[0]?.finish_reason).toBe("stop");

    backend.push(textCompletion("Hmm."), textCompletion("Sunny, I believe."));
    const { data: message, response: anthropicResponse } = await anthropicClientFor(proxy)
      .messages.create({
        model: "m",
        max_tokens: 32_000,
        messages: [{ role: "user", content: "Weather in Paris?" }],
        tools: [weatherToolAnthropic],
        tool_choice: { type: "auto" },
      })
      .withResponse();
    expect(anthropicResponse.headers.get("x-forge-guardrail")).toBe("gave-up");
    expect(message).toMatchObject({
      stop_reason: "end_turn",
      content: [{ type: "text", text: "Sunny, I believe." }],
    });
    expect(backend.chatRequests).toHaveLength(4);
    backend.assertDone();
    await expect.poll(() => lines.length).toBe(2);
    for (const line of lines)
      expect(JSON.parse(line)).toMatchObject({ status: 200, guardrail: "gave_up", retries: 1 });
    const metrics = await (await fetch(`${proxy.url}/forge/metrics`)).text();
    expect(metrics).toContain('forge_proxy_gave_up_total{route="/v1/chat/completions"} 1');
    expect(metrics).toContain('forge_proxy_gave_up_total{route="/v1/messages"} 1');
  });

  it("is retries_exhausted when the last answer is empty: no prose to give", async () => {
    const backend = await scripted([textCompletion("prose"), textCompletion("")]);
    const proxy = await proxyFor(backend, { maxRetries: 1 });
    const error = await rejection(
      anthropicClientFor(proxy).messages.create({
        model: "m",
        max_tokens: 64,
        messages: [{ role: "user", content: "Weather in Paris?" }],
        tools: [weatherToolAnthropic],
      }),
    );
    expect(error).toBeInstanceOf(Anthropic.UnprocessableEntityError);
    backend.assertDone();
  });

  it("is retries_exhausted (422, not retried by the SDKs) when tool_choice demands a call", async () => {
    const backend = await scripted([textCompletion("prose"), textCompletion("more prose")]);
    const proxy = await proxyFor(backend, { maxRetries: 1 });
    // SDK retries on: a 5xx here would be sent again.
    const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: "k", maxRetries: 2, timeout: 20_000 });
    const error = await rejection(
      client.chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: "Weather in Paris?" }],
        tools: [weatherToolOpenAI],
        tool_choice: "required",
      }),
    );
    expect(error).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe("retries_exhausted");
    expect((error as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({
      raw_response: "more prose",
    });
    expect(backend.chatRequests).toHaveLength(2);
    backend.assertDone();
  });
});

describe("malformed arguments every time", () => {
  const malformed = () => toolCallCompletion([{ name: "get_weather", args: '{"city": "Par' }]);

  it("is retries_exhausted with the raw output on the OpenAI route, not a 500", async () => {
    const backend = await scripted([malformed(), malformed(), malformed()]);
    const proxy = await proxyFor(backend);
    const error = await rejection(
      openAIClientFor(proxy).chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: "Weather in Paris?" }],
        tools: [weatherToolOpenAI],
      }),
    );
    expect(error).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    const apiError = error as InstanceType<typeof OpenAI.APIError>;
    expect(apiError.code).toBe("retries_exhausted");
    const raw = (apiError.error as { raw_response: string }).raw_response;
    expect(JSON.parse(raw)).toEqual([
      { name: "get_weather", arguments_error: expect.stringContaining('{"city": "Par') },
    ]);
    backend.assertDone();
  });

  it("is retries_exhausted with the raw output on the Anthropic route, in-process", async () => {
    const backend = await scripted([malformed(), malformed(), malformed()]);
    const app = createProxy({ backend: createHttpBackend({ url: backend.url, toolMode: "native" }) });
    const response = await app.request("/v1/messages", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "m",
        max_tokens: 32_000,
        messages: [{ role: "user", content: "Weather in Paris?" }],
        tools: [weatherToolAnthropic],
      }),
    });
    expect(response.status).toBe(422);
    expect(response.headers.get("x-should-retry")).toBe("false");
    const body = (await response.json()) as { type: string; error: { type: string; raw_response: string } };
    expect(body).toMatchObject({ type: "error", error: { type: "api_error" } });
    expect(body.error.raw_response).toContain('{\\"city\\": \\"Par');
    backend.assertDone();
  });
});
