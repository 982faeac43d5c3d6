/**
 * Token usage and exact prompt counts against a real llama-server (tiny test model):
 * `OpenAICompatibleClient` reports each answer's prompt tokens through `SendOptions.onUsage`,
 * streamed or not, with the part its prompt cache served, and `createLlamaServerTokenizer` counts
 * the same prompt, tools included, before it is sent.
 */
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createLlamaServerTokenizer } from "../../src/clients/llama-server/tokenizer.ts";
import { OpenAICompatibleClient } from "../../src/clients/openai/compatible-client.ts";
import { defineTool } from "../../src/core/tools.ts";
import type { TokenUsage } from "../../src/core/types.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { startTestLlamaServer, type TestLlamaServer } from "../helpers/llama-server-process.ts";

let server: TestLlamaServer;

beforeAllOrFail(async () => {
  server = await startTestLlamaServer();
}, 900_000);

afterAll(() => server?.stop());

const weather = defineTool({
  name: "get_weather",
  description: "Current weather for a city",
  parameters: z.object({ city: z.string() }),
  execute: () => "sunny",
});

const messages = [
  { role: "system", content: "You answer weather questions with the get_weather tool." },
  { role: "user", content: "What is the weather in Paris today?" },
];

function client(): OpenAICompatibleClient {
  return new OpenAICompatibleClient({
    baseUrl: `${server.baseUrl}/v1`,
    mode: "native",
    maxTokens: 4,
    temperature: 0,
    retries: 0,
    logger: () => {},
  });
}

describe("usage from llama-server", () => {
  it("reports the prompt tokens the tokenizer counts, and the cached part on a repeat", async () => {
    const tokenizer = createLlamaServerTokenizer({
      baseUrl: server.baseUrl,
      contextLength: async () => null,
    });
    const counted = await tokenizer.countPrompt(messages, [weather.spec]);
    const usages: TokenUsage[] = [];
    await client().send(messages, [weather.spec], { onUsage: (usage) => usages.push(usage) });
    await client().send(messages, [weather.spec], { onUsage: (usage) => usages.push(usage) });
    expect(usages).toHaveLength(2);
    expect(usages[0]!.promptTokens).toBe(counted);
    expect(usages[1]!.promptTokens).toBe(counted);
    // The same prompt again: all but the last token comes from the prompt cache.
    expect(usages[1]!.cachedTokens).toBe(counted - 1);
  });

  it("reports usage on a stream (llama-server's timings, no include_usage asked)", async () => {
    const tokenizer = createLlamaServerTokenizer({
      baseUrl: server.baseUrl,
      contextLength: async () => null,
    });
    const counted = await tokenizer.countPrompt(messages, [weather.spec]);
    const usages: TokenUsage[] = [];
    for await (const _chunk of client().sendStream(messages, [weather.spec], {
      onUsage: (usage) => usages.push(usage),
    })) {
      // drain
    }
    expect(usages.length).toBeGreaterThan(0);
    expect(usages.at(-1)!.promptTokens).toBe(counted);
  });

  it("says a server without /tokenize is not llama-server", async () => {
    const tokenizer = createLlamaServerTokenizer({
      baseUrl: `${server.baseUrl}/nothing`,
      contextLength: async () => null,
    });
    await expect(tokenizer.countText("hello")).rejects.toThrow(/has no POST \/tokenize/);
  });
});
