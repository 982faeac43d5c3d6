/**
 * Context limits against a real llama-server (tiny random-weight test model, 2048-token window,
 * about one character per token, so chars/4 underestimates it fourfold): the proxy counts prompts
 * with llama-server's own template and tokenizer, tools included, compacts on those counts, and
 * answers a prompt that cannot fit with the error shape the official `openai` and
 * `@anthropic-ai/sdk` clients parse, whether the proxy or llama-server refuses it.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import {
  createLlamaServerTokenizer,
  type PromptTokenizer,
} from "../../src/clients/llama-server/tokenizer.ts";
import { ContextManager, TieredCompact } from "../../src/context/index.ts";
import { type Message, serializeHistory } from "../../src/core/messages.ts";
import { toOpenAITool } from "../../src/core/tools.ts";
import { createHttpBackend } from "../../src/proxy/backend/http-backend.ts";
import { createChatService } from "../../src/proxy/chat-service.ts";
import { createRequestStats } from "../../src/proxy/request-stats.ts";
import type { RunningProxy } from "../../src/proxy/server.ts";
import { toolSpecFromWire } from "../../src/proxy/tool-specs.ts";
import { respondTool } from "../../src/tools/respond.ts";
import { executedBatch, systemPrompt, userInput } from "../context/history-fixtures.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { startTestLlamaServer, type TestLlamaServer } from "../helpers/llama-server-process.ts";
import {
  anthropicClientFor,
  openAIClientFor,
  startTestProxy,
  weatherToolAnthropic,
  weatherToolOpenAI,
} from "./helpers/proxy-fixture.ts";

const WINDOW = 2048;
const MAX_TOKENS = 16;
/** The prompt limit the proxy works to: the window less the request's max_tokens. */
const PROMPT_LIMIT = WINDOW - MAX_TOKENS;

let server: TestLlamaServer;
let tokenizer: PromptTokenizer;
let proxy: RunningProxy;
/** A proxy told the window is far larger than it is: llama-server itself refuses the prompt. */
let unguarded: RunningProxy;

beforeAllOrFail(async () => {
  server = await startTestLlamaServer({ ctx: WINDOW });
  tokenizer = createLlamaServerTokenizer({ baseUrl: server.baseUrl, contextLength: async () => WINDOW });
  proxy = await startTestProxy({ backendUrl: server.baseUrl, serialize: true, maxRetries: 0 });
  unguarded = await startTestProxy({
    backendUrl: server.baseUrl,
    serialize: true,
    maxRetries: 0,
    budgetTokens: 100_000,
  });
}, 900_000);

afterAll(async () => {
  await proxy?.close();
  await unguarded?.close();
  await server?.stop();
});

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to fail");
}

/** A text of `length` digits: one token per character with this model's tokenizer. */
const digits = (length: number) => "1234567890".repeat(Math.ceil(length / 10)).slice(0, length);

describe("exact prompt counts (llama-server /apply-template + /tokenize)", () => {
  it("match the prompt_tokens llama-server reports, tools included", async () => {
    const messages = [
      { role: "system", content: "You answer weather questions." },
      { role: "user", content: "Weather in Paris?" },
    ];
    // As the proxy turns a client's tool into a spec.
    const tool = toolSpecFromWire(weatherToolOpenAI.function, "tools[0]");
    const answer = await fetch(`${server.baseUrl}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages, tools: [weatherToolOpenAI], max_tokens: 1, cache_prompt: false }),
    });
    const body = (await answer.json()) as { usage: { prompt_tokens: number } };
    const withTools = await tokenizer.countPrompt(messages, [tool]);
    const withoutTools = await tokenizer.countPrompt(messages, []);
    expect(withTools).toBe(body.usage.prompt_tokens);
    expect(withTools - withoutTools).toBeGreaterThan(20);
  });
});

describe("count_tokens against llama-server", () => {
  it("is exact: the prompt_tokens llama-server reports for what the proxy would send, respond included", async () => {
    const { data, response } = await anthropicClientFor(proxy)
      .messages.countTokens({
        model: "m",
        system: "You answer weather questions.",
        messages: [{ role: "user", content: "Weather in Paris?" }],
        tools: [weatherToolAnthropic],
      })
      .withResponse();
    expect(response.headers.get("x-forge-token-count")).toBe("exact");
    const answer = await fetch(`${server.baseUrl}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        messages: [
          { role: "system", content: "You answer weather questions." },
          { role: "user", content: "Weather in Paris?" },
        ],
        tools: [weatherToolOpenAI, toOpenAITool(respondTool().spec)],
        max_tokens: 1,
        cache_prompt: false,
      }),
    });
    const body = (await answer.json()) as { usage: { prompt_tokens: number } };
    expect(data.input_tokens).toBe(body.usage.prompt_tokens);
  });
});

describe("a max_tokens larger than the window", () => {
  it("is served with the reply clamped to what the prompt leaves, not refused", async () => {
    const message = await anthropicClientFor(proxy).messages.create({
      model: "m",
      max_tokens: 32_000,
      system: "You answer weather questions.",
      messages: [{ role: "user", content: "Weather in Paris?" }],
    });
    expect(message.type).toBe("message");
    expect(message.usage.output_tokens).toBeLessThan(WINDOW);
  });
});

describe("the proxy's compaction on exact counts", () => {
  /** Two old tool results of 800 digits and two short recent iterations: ~1,700 real tokens. */
  function history(): Message[] {
    return [
      systemPrompt(),
      userInput(),
      ...executedBatch(0, [digits(800)]),
      ...executedBatch(1, [digits(800)]),
      ...executedBatch(2, ["12 EUR"]),
      ...executedBatch(3, ["14 EUR"]),
    ];
  }

  it("compacts a history that chars/4 says fits, and sends it", async () => {
    const messages = history();
    const exact = await tokenizer.countPrompt(serializeHistory(messages, "openai"), []);
    const trigger = PROMPT_LIMIT * 0.75;
    expect(exact).toBeGreaterThan(trigger);
    expect(exact).toBeLessThan(WINDOW);
    // The estimate alone would not have compacted it.
    const estimated = new ContextManager({ strategy: new TieredCompact(), budgetTokens: PROMPT_LIMIT });
    expect(estimated.countTokens(messages)).toBeLessThan(trigger);

    const service = createChatService({
      backend: createHttpBackend({ url: server.baseUrl }),
      maxRetries: 0,
      rescueEnabled: true,
    });
    const stats = createRequestStats();
    const answer = await service.answer(
      {
        model: undefined,
        messages,
        tools: [],
        stream: false,
        includeUsage: false,
        extraBody: { max_tokens: MAX_TOKENS },
        callIdPrefix: "call_",
      },
      new AbortController().signal,
      stats,
    );
    expect(stats.compactions).toBe(1);
    expect(stats.backendCalls).toBe(1);
    expect(answer).toBeDefined();
  });
});

describe("a prompt that cannot fit", () => {
  const huge = digits(2600);

  it("is context_length_exceeded for the openai SDK, refused by the proxy (tools counted)", async () => {
    const error = await rejection(
      openAIClientFor(proxy).chat.completions.create({
        model: "tiny",
        messages: [{ role: "user", content: huge }],
        tools: [weatherToolOpenAI],
        max_tokens: MAX_TOKENS,
      }),
    );
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    const badRequest = error as InstanceType<typeof OpenAI.BadRequestError>;
    expect(badRequest.status).toBe(400);
    expect(badRequest.code).toBe("context_length_exceeded");
    expect(badRequest.param).toBe("messages");
    expect(badRequest.type).toBe("invalid_request_error");
    expect(badRequest.message).toMatch(
      new RegExp(
        `maximum context length is ${PROMPT_LIMIT} tokens.*resulted in \\d+ tokens, even after compaction`,
      ),
    );
  });

  it("is 'prompt is too long' for the Anthropic SDK, refused by the proxy", async () => {
    const error = await rejection(
      anthropicClientFor(proxy).messages.create({
        model: "tiny",
        max_tokens: MAX_TOKENS,
        messages: [{ role: "user", content: huge }],
        tools: [weatherToolAnthropic],
      }),
    );
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    const badRequest = error as InstanceType<typeof Anthropic.BadRequestError>;
    expect(badRequest.status).toBe(400);
    expect(badRequest.error).toMatchObject({
      type: "error",
      error: {
        type: "invalid_request_error",
        message: expect.stringMatching(
          new RegExp(`^prompt is too long: \\d+ tokens > ${PROMPT_LIMIT} maximum$`),
        ),
      },
    });
  });

  it("is the same shape when llama-server itself refuses it (exceed_context_size_error)", async () => {
    const openai = await rejection(
      openAIClientFor(unguarded).chat.completions.create({
        model: "tiny",
        messages: [{ role: "user", content: huge }],
        max_tokens: MAX_TOKENS,
      }),
    );
    expect(openai).toBeInstanceOf(OpenAI.BadRequestError);
    expect((openai as InstanceType<typeof OpenAI.BadRequestError>).code).toBe("context_length_exceeded");
    expect((openai as Error).message).toMatch(new RegExp(`maximum context length is ${WINDOW} tokens`));
    const anthropic = await rejection(
      anthropicClientFor(unguarded).messages.create({
        model: "tiny",
        max_tokens: MAX_TOKENS,
        messages: [{ role: "user", content: huge }],
      }),
    );
    expect(anthropic).toBeInstanceOf(Anthropic.BadRequestError);
    expect((anthropic as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({
      error: {
        type: "invalid_request_error",
        message: expect.stringMatching(new RegExp(`^prompt is too long: \\d+ tokens > ${WINDOW} maximum$`)),
      },
    });
  });
});
