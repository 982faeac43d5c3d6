/**
 * The call-confidence probe (ADR 040) against a real llama-server (the tiny random-weight test
 * model): llama-server answers a one-token request with `logprobs` in the shape the proxy reads,
 * and on a prompt it has just answered the probe reuses the cached prompt.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createHttpBackend } from "../../src/proxy/backend/http-backend.ts";
import { hasFirstTokens } from "../../src/proxy/call-confidence.ts";
import { toolSpecFromWire } from "../../src/proxy/tool-specs.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { startTestLlamaServer, type TestLlamaServer } from "../helpers/llama-server-process.ts";
import { weatherToolOpenAI } from "./helpers/proxy-fixture.ts";

let server: TestLlamaServer;

beforeAllOrFail(async () => {
  server = await startTestLlamaServer();
}, 900_000);

afterAll(async () => {
  await server?.stop();
});

describe("the first-token probe on llama-server", () => {
  it("reads the likeliest first tokens of a prompt with tools, likeliest first", async () => {
    const backend = createHttpBackend({ url: server.baseUrl });
    const client = backend.client({ model: undefined, extraBody: { temperature: 0, max_tokens: 8 } });
    expect(hasFirstTokens(client)).toBe(true);
    if (!hasFirstTokens(client)) return;
    const messages = [{ role: "user", content: "What is the weather in Paris?" }];
    const tools = [toolSpecFromWire(weatherToolOpenAI.function, "tools[0]")];
    // The answer first, as the proxy does: the probe then asks the prompt llama-server just cached.
    await client.send(messages, tools);
    const choices = await client.firstTokens(messages, tools, { top: 5 });
    expect(choices).toHaveLength(5);
    const probabilities = (choices ?? []).map((choice) => choice.probability);
    expect(probabilities.every((p) => p > 0 && p <= 1)).toBe(true);
    expect([...probabilities].sort((a, b) => b - a)).toEqual(probabilities);
    expect(probabilities.reduce((sum, p) => sum + p, 0)).toBeLessThanOrEqual(1.0001);
    await backend.close?.();
  }, 120_000);
});
