/**
 * The proxy app in-process (`app.request()`), with a ScriptedClient behind it: routing, the
 * respond round trip, rendering in both APIs' shapes, compaction, and pass-through routes.
 */
import type Anthropic from "@anthropic-ai/sdk";
import type OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { createProxy } from "../../src/proxy/app.ts";
import { text, toolCall } from "../../src/testing/index.ts";
import { createFakeBackend } from "./helpers/fake-backend.ts";

const tools = [
  {
    type: "function",
    function: {
      name: "search",
      description: "Search the web",
      parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
    },
  },
];

/** The parts of a chat.completion these tests read. */
interface Completion {
  id: string;
  object: string;
  model: string;
  choices: {
    finish_reason: string;
    message: {
      content: string | null;
      reasoning_content?: string;
      tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
    };
  }[];
  usage?: { prompt_tokens: number };
}
const completionOf = async (response: Response) => (await response.json()) as Completion;
const messageOf = async (response: Response) => (await response.json()) as Anthropic.Message;

const json = (body: unknown) => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});

describe("POST /v1/chat/completions in-process", () => {
  it("returns a tool call as tool_calls with finish_reason tool_calls and the reasoning alongside", async () => {
    const backend = createFakeBackend([toolCall("search", { query: "xstate" }, "I should search.")]);
    const app = createProxy({ backend });
    const response = await app.request(
      "/v1/chat/completions",
      json({ model: "m", messages: [{ role: "user", content: "find xstate" }], tools }),
    );
    expect(response.status).toBe(200);
    const body = await completionOf(response);
    expect(body.object).toBe("chat.completion");
    expect(body.model).toBe("m");
    const choice = body.choices[0]!;
    expect(choice.finish_reason).toBe("tool_calls");
    expect(choice.message.content).toBeNull();
    expect(choice.message.reasoning_content).toBe("I should search.");
    expect(choice.message.tool_calls).toEqual([
      {
        id: expect.stringMatching(/^call_/),
        type: "function",
        function: { name: "search", arguments: '{"query":"xstate"}' },
      },
    ]);
    expect(body.usage?.prompt_tokens).toBeGreaterThan(0);
    // The model was offered the client's tools plus respond; the client never sees respond.
    expect(backend.scripted.calls[0]?.tools.map((tool) => tool.name)).toEqual(["search", "respond"]);
    backend.scripted.assertDone();
  });

  it("drops a respond call that came with real calls and keeps its message as content", async () => {
    const backend = createFakeBackend([
      [
        { tool: "respond", args: { message: "Searching now." } },
        { tool: "search", args: { query: "q" } },
      ],
    ]);
    const response = await createProxy({ backend }).request(
      "/v1/chat/completions",
      json({ messages: [{ role: "user", content: "q" }], tools }),
    );
    const choice = (await completionOf(response)).choices[0]!;
    expect(choice.message.content).toBe("Searching now.");
    expect(choice.message.tool_calls?.map((call) => call.function.name)).toEqual(["search"]);
    expect(choice.finish_reason).toBe("tool_calls");
  });

  it("does not inject or strip respond when the client defines its own respond tool", async () => {
    const own = [
      ...tools,
      { type: "function", function: { name: "respond", parameters: { type: "object", properties: {} } } },
    ];
    const backend = createFakeBackend([toolCall("respond", { message: "x" })]);
    const response = await createProxy({ backend }).request(
      "/v1/chat/completions",
      json({ messages: [{ role: "user", content: "q" }], tools: own }),
    );
    const choice = (await completionOf(response)).choices[0]!;
    expect(choice.message.tool_calls?.[0]?.function.name).toBe("respond");
    expect(backend.scripted.calls[0]?.tools.map((tool) => tool.name)).toEqual(["search", "respond"]);
  });

  it("treats tool_choice none as a request without tools and forwards it untouched", async () => {
    const backend = createFakeBackend([]);
    const request = { messages: [{ role: "user", content: "q" }], tools, tool_choice: "none", x_custom: 1 };
    const response = await createProxy({ backend }).request("/v1/chat/completions", json(request));
    expect((await completionOf(response)).id).toBe("chatcmpl-forwarded");
    expect(backend.forwarded[0]).toMatchObject({ method: "POST", path: "/v1/chat/completions" });
    expect(JSON.parse(backend.forwarded[0]?.body ?? "")).toEqual(request);
  });

  it("answers on /chat/completions too, streaming OpenAI chunks that end in [DONE]", async () => {
    const backend = createFakeBackend([toolCall("search", { query: "a" })]);
    const response = await createProxy({ backend }).request(
      "/chat/completions",
      json({ messages: [{ role: "user", content: "q" }], tools, stream: true }),
    );
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events = (await response.text()).trim().split("\n\n");
    expect(events.at(-1)).toBe("data: [DONE]");
    const chunks = events
      .slice(0, -1)
      .map((event) => JSON.parse(event.replace(/^data: /, "")) as OpenAI.Chat.ChatCompletionChunk);
    expect(chunks.every((chunk) => chunk.object === "chat.completion.chunk")).toBe(true);
    expect(chunks[0]?.choices[0]?.delta.role).toBe("assistant");
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe("tool_calls");
    expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
  });

  it("compacts a history over the budget before sending it", async () => {
    const backend = createFakeBackend([toolCall("respond", { message: "done" })]);
    const long = "result ".repeat(400);
    const messages: Record<string, unknown>[] = [
      { role: "system", content: "sys" },
      { role: "user", content: "go" },
    ];
    for (let index = 0; index < 6; index++) {
      messages.push({
        role: "assistant",
        content: "",
        tool_calls: [
          {
            id: `c${index}`,
            type: "function",
            function: { name: "search", arguments: `{"query":"q${index}"}` },
          },
        ],
      });
      messages.push({ role: "tool", tool_call_id: `c${index}`, content: long });
    }
    const response = await createProxy({ backend, budgetTokens: 1000 }).request(
      "/v1/chat/completions",
      json({ messages, tools }),
    );
    expect(response.status).toBe(200);
    const sent = backend.scripted.calls[0]?.messages ?? [];
    const sentChars = sent.reduce((sum, message) => sum + String(message.content).length, 0);
    expect(sentChars).toBeLessThan(6 * long.length);
    expect(sent[0]).toMatchObject({ role: "system", content: "sys" });
    expect(sent[1]).toMatchObject({ role: "user", content: "go" });
  });

  it("compacts every request on its own, however many one proxy serves", async () => {
    const backend = createFakeBackend([
      toolCall("respond", { message: "one" }),
      toolCall("respond", { message: "two" }),
      toolCall("respond", { message: "three" }),
    ]);
    const result = "result ".repeat(400);
    const long: Record<string, unknown>[] = [{ role: "user", content: "go" }];
    for (let index = 0; index < 6; index++) {
      long.push(
        {
          role: "assistant",
          content: "",
          tool_calls: [
            {
              id: `c${index}`,
              type: "function",
              function: { name: "search", arguments: `{"query":"q${index}"}` },
            },
          ],
        },
        { role: "tool", tool_call_id: `c${index}`, content: result },
      );
    }
    const proxy = createProxy({ backend, budgetTokens: 1000 });
    for (const messages of [long, [{ role: "user", content: "hello" }], long]) {
      const response = await proxy.request("/v1/chat/completions", json({ messages, tools }));
      expect(response.status).toBe(200);
    }
    const [first, second, third] = backend.scripted.calls.map((call) => call.messages);
    const chars = (sent: Record<string, unknown>[] = []) =>
      sent.reduce((sum, message) => sum + String(message.content).length, 0);
    expect(chars(first)).toBeLessThan(6 * result.length);
    expect(second).toEqual([{ role: "user", content: "hello" }]);
    expect(third).toEqual(first);
  });

  it("uses the backend's context length as the budget when none is given", async () => {
    const backend = createFakeBackend([toolCall("respond", { message: "done" })], { contextLength: 300 });
    const messages = [
      { role: "user", content: "go" },
      ...Array.from({ length: 4 }, (_, index) => [
        {
          role: "assistant",
          content: "",
          tool_calls: [
            {
              id: `c${index}`,
              type: "function",
              function: { name: "search", arguments: `{"query":"q${index}"}` },
            },
          ],
        },
        { role: "tool", tool_call_id: `c${index}`, content: "x".repeat(2000) },
      ]).flat(),
    ];
    await createProxy({ backend }).request("/v1/chat/completions", json({ messages, tools }));
    const sent = backend.scripted.calls[0]?.messages ?? [];
    expect(sent.reduce((sum, message) => sum + String(message.content).length, 0)).toBeLessThan(8000);
  });
});

describe("POST /v1/messages in-process", () => {
  const anthropicTools = [
    { name: "search", description: "Search", input_schema: { type: "object", properties: {} } },
  ];

  it("renders calls as tool_use blocks with toolu_ ids", async () => {
    const backend = createFakeBackend([toolCall("search", { query: "b" })]);
    const response = await createProxy({ backend }).request(
      "/v1/messages",
      json({
        model: "claude-ish",
        max_tokens: 10,
        messages: [{ role: "user", content: "q" }],
        tools: anthropicTools,
      }),
    );
    const body = await messageOf(response);
    expect(body).toMatchObject({
      type: "message",
      role: "assistant",
      model: "claude-ish",
      stop_reason: "tool_use",
    });
    expect(body.content).toEqual([
      { type: "tool_use", id: expect.stringMatching(/^toolu_/), name: "search", input: { query: "b" } },
    ]);
    expect(body.usage.input_tokens).toBeGreaterThan(0);
  });

  it("maps tool_choice any and tool to OpenAI's names for the backend", async () => {
    const backend = createFakeBackend([toolCall("search", {}), toolCall("search", {})]);
    const app = createProxy({ backend });
    const base = { max_tokens: 10, messages: [{ role: "user", content: "q" }], tools: anthropicTools };
    await app.request("/v1/messages", json({ ...base, tool_choice: { type: "any" } }));
    await app.request("/v1/messages", json({ ...base, tool_choice: { type: "tool", name: "search" } }));
    expect(backend.calls.map((call) => call.extraBody.tool_choice)).toEqual([
      "required",
      { type: "function", function: { name: "search" } },
    ]);
  });

  it("streams events from message_start to message_stop", async () => {
    const backend = createFakeBackend([toolCall("respond", { message: "hello" })]);
    const response = await createProxy({ backend }).request(
      "/v1/messages",
      json({
        max_tokens: 10,
        messages: [{ role: "user", content: "q" }],
        tools: anthropicTools,
        stream: true,
      }),
    );
    const names = [...(await response.text()).matchAll(/^event: (\w+)$/gm)].map((match) => match[1]);
    expect(names).toEqual([
      "message_start",
      "content_block_start",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
  });

  it("answers a tool-less request through the client without tools", async () => {
    const backend = createFakeBackend([text("plain")]);
    const response = await createProxy({ backend }).request(
      "/v1/messages",
      json({
        max_tokens: 10,
        system: [{ type: "text", text: "sys" }],
        messages: [{ role: "user", content: "q" }],
      }),
    );
    expect((await messageOf(response)).content).toEqual([{ type: "text", text: "plain" }]);
    expect(backend.scripted.calls[0]?.tools).toEqual([]);
    expect(backend.scripted.calls[0]?.messages[0]).toMatchObject({ role: "system", content: "sys" });
  });
});

describe("pass-through and health routes in-process", () => {
  it("forwards GET /v1/models, /models and /props", async () => {
    const backend = createFakeBackend([], {
      forwardReply: (request) => Response.json({ path: request.path }),
    });
    const app = createProxy({ backend });
    for (const [path, expected] of [
      ["/v1/models", "/v1/models"],
      ["/models", "/v1/models"],
      ["/props", "/props"],
    ]) {
      const response = await app.request(path as string);
      expect(await response.json()).toEqual({ path: expected });
    }
  });

  it("reports proxy and backend state on /forge/health to the key's holder", async () => {
    const app = createProxy({ backend: createFakeBackend([]), serialize: true, apiKey: "k" });
    const request = new Request("http://proxy/forge/health", { headers: { authorization: "Bearer k" } });
    const body = (await (await app.request(request)).json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      status: "ok",
      proxy: { status: "ok", serialize: true, queued: 0, authentication: true },
      backend: { status: "ok", url: expect.any(String) },
    });
  });

  it("shows only statuses on /forge/health without the key, or when the proxy has none", async () => {
    const backend = createFakeBackend([]);
    const publicView = { status: "ok", proxy: { status: "ok", queued: 0 }, backend: { status: "ok" } };
    for (const [app, headers] of [
      [createProxy({ backend, serialize: true, apiKey: "k" }), {}],
      [createProxy({ backend, serialize: true, apiKey: "k" }), { authorization: "Bearer wrong" }],
      [createProxy({ backend, serialize: true }), { authorization: "Bearer k" }],
    ] as const) {
      const body = (await (
        await app.request(new Request("http://proxy/forge/health", { headers }))
      ).json()) as { backend: Record<string, unknown>; proxy: Record<string, unknown> };
      expect(body).toMatchObject(publicView);
      expect(body.backend.url).toBeUndefined();
      expect(Object.keys(body.proxy).sort()).toEqual(["queued", "status"]);
    }
  });

  it("answers 499 in-process when the client's signal aborts mid-inference", async () => {
    const { hangUntilAborted } = await import("../../src/testing/index.ts");
    const backend = createFakeBackend([hangUntilAborted()]);
    const controller = new AbortController();
    const pending = createProxy({ backend }).request(
      new Request("http://proxy/v1/chat/completions", {
        ...json({ messages: [{ role: "user", content: "q" }], tools }),
        signal: controller.signal,
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(backend.scripted.calls).toHaveLength(1);
    controller.abort();
    const response = await pending;
    expect(response.status).toBe(499);
    expect(backend.scripted.calls[0]?.signal?.aborted).toBe(true);
  });
});
