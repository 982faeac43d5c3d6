/**
 * Credential routing for every backend format, against local node:http backends on 127.0.0.1 that
 * record every header they receive: the backend key reaches Ollama and Anthropic-shaped backends,
 * the client's key never does, and an ambient `ANTHROPIC_API_KEY` / `ANTHROPIC_AUTH_TOKEN` never
 * leaves the proxy for a URL that is not Anthropic's own API.
 */
import { readFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { BackendFormat } from "../../src/proxy/backend/backend.ts";
import { anthropicCredential, isAnthropicApi } from "../../src/proxy/backend/client-factories.ts";
import type { RunningProxy } from "../../src/proxy/server.ts";
import {
  anthropicClientFor,
  openAIClientFor,
  startTestProxy,
  weatherToolAnthropic,
  weatherToolOpenAI,
} from "./helpers/proxy-fixture.ts";

const AMBIENT_KEY = "sk-ant-ambient-secret-0123456789";
const AMBIENT_TOKEN = "ambient-auth-token-9876543210";

const anthropicToolUse = JSON.parse(
  readFileSync(new URL("../fixtures/anthropic/message-tool-use.json", import.meta.url), "utf8"),
) as Record<string, unknown>;
const ollamaToolCall = {
  message: {
    role: "assistant",
    content: "",
    tool_calls: [{ function: { name: "get_weather", arguments: { city: "Paris" } } }],
  },
  done: true,
};

interface Recorded {
  path: string;
  headers: IncomingHttpHeaders;
}

const cleanups: (() => Promise<void>)[] = [];
const savedEnv = { key: process.env.ANTHROPIC_API_KEY, token: process.env.ANTHROPIC_AUTH_TOKEN };

beforeEach(() => {
  process.env.ANTHROPIC_API_KEY = AMBIENT_KEY;
  process.env.ANTHROPIC_AUTH_TOKEN = AMBIENT_TOKEN;
});

afterEach(async () => {
  restore("ANTHROPIC_API_KEY", savedEnv.key);
  restore("ANTHROPIC_AUTH_TOKEN", savedEnv.token);
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

function restore(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

/** A backend answering every POST with `answer`, recording each request's path and headers. */
async function proxyInFrontOf(
  answer: unknown,
  backend: { format: BackendFormat; apiKey?: string },
): Promise<{ proxy: RunningProxy; seen: Recorded[] }> {
  const seen: Recorded[] = [];
  const server = createServer(async (incoming, outgoing) => {
    for await (const _chunk of incoming) {
      // Drained; only the headers matter here.
    }
    seen.push({ path: incoming.url ?? "", headers: incoming.headers });
    outgoing.writeHead(200, { "content-type": "application/json" });
    outgoing.end(JSON.stringify(incoming.method === "POST" ? answer : { version: "0.0.0" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const proxy = await startTestProxy({ backendUrl: url, backend: { defaultModel: "m", ...backend } });
  cleanups.push(async () => {
    await proxy.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { proxy, seen };
}

function allHeaderText(seen: readonly Recorded[]): string {
  return JSON.stringify(seen.map((request) => request.headers));
}

describe("Ollama backend", () => {
  it("receives the backend key as Authorization: Bearer, and never the client's key", async () => {
    const { proxy, seen } = await proxyInFrontOf(ollamaToolCall, { format: "ollama", apiKey: "backend-key" });
    await openAIClientFor(proxy, "client-key").chat.completions.create({
      model: "qwen3:8b",
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools: [weatherToolOpenAI],
    });
    const chat = seen.find((request) => request.path === "/api/chat");
    expect(chat?.headers.authorization).toBe("Bearer backend-key");
    expect(allHeaderText(seen)).not.toContain("client-key");
  });

  it("sends no Authorization when no backend key is given", async () => {
    const { proxy, seen } = await proxyInFrontOf(ollamaToolCall, { format: "ollama" });
    await openAIClientFor(proxy, "client-key").chat.completions.create({
      model: "qwen3:8b",
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools: [weatherToolOpenAI],
    });
    const chat = seen.find((request) => request.path === "/api/chat");
    expect(chat).toBeDefined();
    expect(chat?.headers.authorization).toBeUndefined();
  });
});

describe("Anthropic-shaped backend that is not Anthropic's API", () => {
  it("never receives the ambient ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN when no backend key is given", async () => {
    const { proxy, seen } = await proxyInFrontOf(anthropicToolUse, { format: "anthropic" });
    const message = await anthropicClientFor(proxy, "client-key").messages.create({
      model: "claude-sonnet-4-5",
      max_tokens: 100,
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools: [weatherToolAnthropic],
    });
    expect(message.stop_reason).toBe("tool_use");
    const sent = seen.find((request) => request.path.startsWith("/v1/messages"));
    expect(sent).toBeDefined();
    expect(sent?.headers["x-api-key"]).toBeUndefined();
    expect(sent?.headers.authorization).toBeUndefined();
    const headers = allHeaderText(seen);
    expect(headers).not.toContain(AMBIENT_KEY);
    expect(headers).not.toContain(AMBIENT_TOKEN);
    expect(headers).not.toContain("client-key");
  });

  it("receives the backend key, not the ambient one, when one is given", async () => {
    const { proxy, seen } = await proxyInFrontOf(anthropicToolUse, {
      format: "anthropic",
      apiKey: "backend-key",
    });
    await anthropicClientFor(proxy, "client-key").messages.create({
      model: "claude-sonnet-4-5",
      max_tokens: 100,
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools: [weatherToolAnthropic],
    });
    const sent = seen.find((request) => request.path.startsWith("/v1/messages"));
    expect(sent?.headers["x-api-key"] ?? sent?.headers.authorization).toMatch(/^(Bearer )?backend-key$/);
    expect(allHeaderText(seen)).not.toContain(AMBIENT_KEY);
    expect(allHeaderText(seen)).not.toContain(AMBIENT_TOKEN);
  });
});

describe("anthropicCredential", () => {
  const config = (baseUrl: string, apiKey?: string) => ({
    baseUrl,
    format: "anthropic" as const,
    apiKey,
    timeoutMs: 1000,
  });

  it("leaves the SDK's ambient credential only to https://api.anthropic.com", () => {
    expect(anthropicCredential(config("https://api.anthropic.com"))).toEqual({});
    expect(anthropicCredential(config("https://api.anthropic.com/"))).toEqual({});
  });

  it("sends no credential to any other URL, look-alikes included", () => {
    for (const url of [
      "http://api.anthropic.com",
      "https://api.anthropic.com:8443",
      "https://api.anthropic.com.attacker.example",
      "https://attacker.example/api.anthropic.com",
      "http://127.0.0.1:8080",
    ]) {
      expect(isAnthropicApi(url)).toBe(false);
      expect(anthropicCredential(config(url))).toEqual({ apiKey: null });
    }
  });

  it("always sends an explicit backend key", () => {
    expect(anthropicCredential(config("http://127.0.0.1:8080", "backend-key"))).toEqual({
      apiKey: "backend-key",
    });
  });
});
