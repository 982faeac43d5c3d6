/**
 * The proxy in front of the other backend formats: an Ollama `/api/chat` server and an
 * Anthropic-shaped Messages API, each a local node:http server on 127.0.0.1 answering in the
 * shapes of those APIs (`test/fixtures/anthropic` for Anthropic).
 */
import { readFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { RunningProxy } from "../../src/proxy/server.ts";
import {
  anthropicClientFor,
  openAIClientFor,
  startTestProxy,
  weatherToolAnthropic,
  weatherToolOpenAI,
} from "./helpers/proxy-fixture.ts";

interface Seen {
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

/** A server answering each POST with the next of `answers` (JSON), recording what it got. */
async function startAnswering(answers: unknown[]): Promise<{ url: string; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  const server = createServer(async (incoming, outgoing) => {
    let raw = "";
    for await (const chunk of incoming) raw += String(chunk);
    seen.push({ path: incoming.url ?? "", headers: incoming.headers, body: raw ? JSON.parse(raw) : {} });
    const answer = incoming.method === "POST" ? answers.shift() : { version: "0.0.0" };
    outgoing.writeHead(answer === undefined ? 500 : 200, { "content-type": "application/json" });
    outgoing.end(JSON.stringify(answer ?? { error: "script exhausted" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

async function proxyFor(
  answers: unknown[],
  backend: { format: "ollama" | "anthropic"; defaultModel?: string; apiKey?: string },
): Promise<{ proxy: RunningProxy; seen: Seen[] }> {
  const server = await startAnswering(answers);
  const proxy = await startTestProxy({ backendUrl: server.url, backend });
  cleanups.push(async () => {
    await proxy.close();
    server.server.closeAllConnections();
    await new Promise((resolve) => server.server.close(resolve));
  });
  return { proxy, seen: server.seen };
}

describe("Ollama backend", () => {
  it("guards a request through OllamaClient: prose is nudged, the native call comes back clean", async () => {
    const { proxy, seen } = await proxyFor(
      [
        { message: { role: "assistant", content: "Let me see." }, done: true },
        {
          message: {
            role: "assistant",
            content: "",
            tool_calls: [{ function: { name: "get_weather", arguments: { city: "Paris" } } }],
          },
          done: true,
        },
      ],
      { format: "ollama", defaultModel: "qwen3:8b" },
    );
    const completion = await openAIClientFor(proxy).chat.completions.create({
      model: "qwen3:8b",
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools: [weatherToolOpenAI],
      temperature: 0.3,
      max_tokens: 50,
    });
    const call = completion.choices[0]?.message.tool_calls?.[0];
    if (call?.type !== "function") throw new Error("expected a function call");
    expect(call.function.name).toBe("get_weather");
    expect(JSON.parse(call.function.arguments)).toEqual({ city: "Paris" });
    const chats = seen.filter((request) => request.path === "/api/chat");
    expect(chats).toHaveLength(2);
    expect(chats[0]?.body).toMatchObject({
      model: "qwen3:8b",
      stream: false,
      options: { temperature: 0.3, num_predict: 50 },
    });
    const names = (chats[0]!.body.tools as { function: { name: string } }[]).map(
      (tool) => tool.function.name,
    );
    expect(names).toEqual(["get_weather", "respond"]);
    expect(await (await fetch(`${proxy.url}/forge/health`)).json()).toMatchObject({
      backend: { status: "ok", format: "ollama" },
    });
  });

  it("answers 400 naming model when neither the request nor --model names one", async () => {
    const { proxy } = await proxyFor([], { format: "ollama" });
    const response = await fetch(`${proxy.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
  });
});

describe("Anthropic-shaped backend", () => {
  const toolUse = JSON.parse(
    readFileSync(new URL("../fixtures/anthropic/message-tool-use.json", import.meta.url), "utf8"),
  ) as { content: Record<string, unknown>[] };

  it("guards a request through AnthropicClient with the backend's own key", async () => {
    const answer = {
      ...toolUse,
      content: [
        toolUse.content[0],
        { type: "tool_use", id: "toolu_backend", name: "get_weather", input: { city: "Paris" } },
      ],
    };
    const { proxy, seen } = await proxyFor([answer], { format: "anthropic", apiKey: "backend-key" });
    const message = await anthropicClientFor(proxy, "client-key").messages.create({
      model: "claude-sonnet-4-5",
      max_tokens: 100,
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools: [weatherToolAnthropic],
    });
    expect(message.stop_reason).toBe("tool_use");
    expect(message.content).toEqual([
      expect.objectContaining({ type: "tool_use", name: "get_weather", input: { city: "Paris" } }),
    ]);
    const sent = seen.find((request) => request.path.startsWith("/v1/messages"));
    // This SDK version sends the key as a Bearer token; either way it is the backend's, never the client's.
    expect(sent?.headers["x-api-key"] ?? sent?.headers.authorization).toMatch(/^(Bearer )?backend-key$/);
    expect(JSON.stringify(sent?.headers)).not.toContain("client-key");
    expect(sent?.body).toMatchObject({ model: "claude-sonnet-4-5", max_tokens: 100 });
    const names = (sent!.body.tools as { name: string }[]).map((tool) => tool.name);
    expect(names).toEqual(["get_weather", "respond"]);
  });
});
