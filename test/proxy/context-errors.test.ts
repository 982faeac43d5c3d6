/**
 * The context-overflow error shapes: the library's ContextBudgetExceeded and a backend's own
 * refusal (llama-server `exceed_context_size_error`, OpenAI-style `context_length_exceeded`)
 * become OpenAI's `context_length_exceeded` and Anthropic's "prompt is too long" bodies; other
 * 400s do not.
 */
import { describe, expect, it } from "vitest";
import { BackendError, ContextBudgetExceeded } from "../../src/core/errors.ts";
import { errorBody, ProxyErrorKind, toProxyHttpError } from "../../src/proxy/errors.ts";
import { clampReplyTokens, replyReserve } from "../../src/proxy/prompt-limit.ts";
import {
  anthropicClientFor,
  openAIClientFor,
  startTestProxy,
  weatherToolAnthropic,
  weatherToolOpenAI,
} from "./helpers/proxy-fixture.ts";
import { scriptedTokenCount, startScriptedBackend, toolCallCompletion } from "./helpers/scripted-backend.ts";

const LLAMA_OVERFLOW = JSON.stringify({
  error: {
    code: 400,
    message: "request (1820 tokens) exceeds the available context size (512 tokens), try increasing it",
    type: "exceed_context_size_error",
    n_prompt_tokens: 1820,
    n_ctx: 512,
  },
});

describe("context overflow errors", () => {
  it("renders ContextBudgetExceeded in the OpenAI and Anthropic shapes", () => {
    const error = toProxyHttpError(new ContextBudgetExceeded(2244, 1920));
    expect(error.status).toBe(400);
    expect(errorBody("openai", error)).toEqual({
      error: {
        message: expect.stringMatching(/maximum context length is 1920 tokens.*resulted in 2244 tokens/),
        type: "invalid_request_error",
        param: "messages",
        code: "context_length_exceeded",
      },
    });
    expect(errorBody("anthropic", error)).toEqual({
      type: "error",
      error: { type: "invalid_request_error", message: "prompt is too long: 2244 tokens > 1920 maximum" },
    });
  });

  it("maps llama-server's exceed_context_size_error with its numbers", () => {
    const error = toProxyHttpError(new BackendError(400, LLAMA_OVERFLOW));
    expect(error.kind).toBe(ProxyErrorKind.CONTEXT_LENGTH_EXCEEDED);
    expect(error.contextOverflow).toEqual({ promptTokens: 1820, maxTokens: 512 });
    expect(errorBody("anthropic", error)).toMatchObject({
      error: { message: "prompt is too long: 1820 tokens > 512 maximum" },
    });
  });

  it("maps an OpenAI-style context_length_exceeded without numbers", () => {
    const body = JSON.stringify({
      error: {
        message: "This model's maximum context length is 4096 tokens",
        code: "context_length_exceeded",
      },
    });
    const error = toProxyHttpError(new BackendError(400, body));
    expect(errorBody("openai", error)).toMatchObject({
      error: { code: "context_length_exceeded", type: "invalid_request_error", param: "messages" },
    });
    expect(error.contextOverflow).toBeUndefined();
  });

  it("leaves other 400s as backend errors", () => {
    const body = JSON.stringify({
      error: { message: "context: bad parameter", type: "invalid_request_error" },
    });
    const error = toProxyHttpError(new BackendError(400, body));
    expect(error.kind).toBe(ProxyErrorKind.BACKEND_ERROR);
    expect(toProxyHttpError(new BackendError(500, LLAMA_OVERFLOW)).kind).toBe(ProxyErrorKind.BACKEND_ERROR);
  });
});

describe("replyReserve", () => {
  it("reserves an eighth of the window up to 1024, or the request's max_tokens when it asks less", () => {
    expect(replyReserve({ max_tokens: 100 }, 2048)).toBe(100);
    expect(replyReserve({ max_completion_tokens: 200, max_tokens: 100 }, 2048)).toBe(200);
    expect(replyReserve({}, 2048)).toBe(256);
    expect(replyReserve({}, 32_768)).toBe(1024);
    expect(replyReserve({ max_tokens: "many" }, 2048)).toBe(256);
  });

  it("never takes a large max_tokens out of the window: agents send 32,000 whatever the window", () => {
    expect(replyReserve({ max_tokens: 300 }, 2048)).toBe(256);
    expect(replyReserve({ max_tokens: 5000 }, 2048)).toBe(256);
    expect(replyReserve({ max_tokens: 32_000 }, 32_768)).toBe(1024);
  });
});

describe("clampReplyTokens", () => {
  it("clamps the reply to what the prompt leaves of the window, never below the reserve", () => {
    const limits = { windowTokens: 32_768, reserve: 1024 };
    expect(clampReplyTokens(32_000, { ...limits, promptTokens: 5000 })).toBe(27_768);
    expect(clampReplyTokens(20_000, { ...limits, promptTokens: 5000 })).toBeUndefined();
    expect(clampReplyTokens(32_000, { ...limits, promptTokens: 32_000 })).toBe(1024);
    expect(clampReplyTokens(undefined, { ...limits, promptTokens: 5000 })).toBeUndefined();
  });
});

describe("exact counting on a backend without a tokenizer", () => {
  it("skips a prompt too short to matter, asks once for a long one, then counts by estimate", async () => {
    const backend = await startScriptedBackend([], {
      fallback: toolCallCompletion([{ name: "get_weather", args: { city: "Oslo" } }]),
    });
    const proxy = await startTestProxy({ backendUrl: backend.url });
    const client = openAIClientFor(proxy);
    const ask = (content: string) =>
      client.chat.completions.create({
        model: "qwen3",
        messages: [{ role: "user", content }],
        tools: [weatherToolOpenAI],
      });
    const tokenizerCalls = () => backend.requests.filter((request) => request.path === "/apply-template");
    try {
      // n_ctx 4096, reserve 512: the trigger is 2,688 tokens; 200 bytes cannot reach it.
      await ask("Weather in Oslo?");
      expect(tokenizerCalls()).toHaveLength(0);
      // 3,000 bytes might: the proxy asks, gets a 404, and estimates from then on.
      for (let index = 0; index < 3; index++) {
        const completion = await ask(`Weather in Oslo? ${"x".repeat(3000)}`);
        expect(completion.choices[0]?.message.tool_calls?.[0]).toMatchObject({
          function: { name: "get_weather" },
        });
      }
      expect(tokenizerCalls()).toHaveLength(1);
      expect(backend.chatRequests).toHaveLength(4);
    } finally {
      await proxy.close();
      await backend.close();
    }
  });
});

describe("a reply reserve that fits real windows", () => {
  const WINDOW = 32_768;
  // 25,000 characters: about 5,000 tokens for the scripted tokenizer, 6,250 by estimate.
  const longPrompt = [{ role: "user" as const, content: `Summarize: ${"lorem ".repeat(4165)}` }];

  it("serves a 5k-token prompt asking max_tokens 32000 of a 32k window, the reply clamped to the exact rest", async () => {
    const backend = await startScriptedBackend(
      [toolCallCompletion([{ name: "respond", args: { message: "Done." } }])],
      { contextLength: WINDOW, tokenizer: true },
    );
    const proxy = await startTestProxy({ backendUrl: backend.url });
    try {
      const message = await anthropicClientFor(proxy).messages.create({
        model: "m",
        max_tokens: 32_000,
        messages: longPrompt,
        tools: [weatherToolAnthropic],
      });
      expect(message.content).toEqual([{ type: "text", text: "Done." }]);
      const tokenized = backend.requests.filter((request) => request.path === "/tokenize");
      expect(tokenized).toHaveLength(1);
      const promptTokens = scriptedTokenCount(String(tokenized[0]?.body.content));
      expect(promptTokens).toBeGreaterThan(5000);
      expect(promptTokens).toBeLessThan(5500);
      expect(backend.chatRequests[0]?.body.max_tokens).toBe(WINDOW - promptTokens);
      backend.assertDone();
    } finally {
      await proxy.close();
      await backend.close();
    }
  });

  it("clamps by estimate on a backend without a tokenizer, and leaves a max_tokens that fits alone", async () => {
    const backend = await startScriptedBackend([], {
      contextLength: WINDOW,
      fallback: toolCallCompletion([{ name: "respond", args: { message: "Done." } }]),
    });
    const proxy = await startTestProxy({ backendUrl: backend.url });
    try {
      const client = openAIClientFor(proxy);
      const ask = (max_tokens: number) =>
        client.chat.completions.create({
          model: "m",
          max_tokens,
          messages: longPrompt,
          tools: [weatherToolOpenAI],
        });
      expect((await ask(32_000)).choices[0]?.message.content).toBe("Done.");
      const clamped = backend.chatRequests[0]?.body.max_tokens as number;
      expect(clamped).toBeGreaterThan(WINDOW - 8000);
      expect(clamped).toBeLessThan(WINDOW - 6000);
      await ask(4000);
      expect(backend.chatRequests[1]?.body.max_tokens).toBe(4000);
      // OpenAI's newer name is clamped alike.
      await client.chat.completions.create({
        model: "m",
        max_completion_tokens: 32_000,
        messages: longPrompt,
        tools: [weatherToolOpenAI],
      });
      expect(backend.chatRequests[2]?.body.max_completion_tokens).toBe(clamped);
    } finally {
      await proxy.close();
      await backend.close();
    }
  });
});
