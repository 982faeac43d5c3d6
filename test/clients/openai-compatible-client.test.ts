/**
 * OpenAICompatibleClient against a real local HTTP server replaying llama-server's wire shapes.
 * (Tests against a real llama-server live with the server-management tests.)
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OpenAICompatibleClient } from "../../src/clients/openai/compatible-client.ts";
import { BackendError, ContextDiscoveryError } from "../../src/core/errors.ts";
import { toOpenAITool } from "../../src/core/tools.ts";
import type { ToolCall } from "../../src/core/types.ts";
import { buildToolPrompt } from "../../src/prompts/tool-prompt.ts";
import { CHAT, completion, errorBody, getWeather, tools } from "./helpers/openai-shapes.ts";
import { json, ReplayServer, raw } from "./helpers/replay-server.ts";

let server: ReplayServer;
let logs: string[];

beforeEach(async () => {
  server = await ReplayServer.start();
  logs = [];
});
afterEach(async () => {
  await server.close();
});

function client(options: ConstructorParameters<typeof OpenAICompatibleClient>[0] = {}) {
  return new OpenAICompatibleClient({
    baseUrl: `${server.url}/v1`,
    logger: (line) => logs.push(line),
    ...options,
  });
}

const history = [
  { role: "system", content: "You are a weather bot." },
  { role: "user", content: "Weather in Paris?" },
];

describe("native mode", () => {
  it("sends the tools in OpenAI shape and the messages unchanged, and parses tool_calls", async () => {
    server.reply(
      CHAT,
      json(
        completion({
          tool_calls: [
            { name: "get_weather", arguments: '{"city": "Paris"}' },
            { name: "get_weather", arguments: '{"city": "Lyon"}' },
          ],
        }),
      ),
    );
    const response = await client({ mode: "native" }).send(history, tools);

    expect(response).toEqual([
      { tool: "get_weather", args: { city: "Paris" } },
      { tool: "get_weather", args: { city: "Lyon" } },
    ]);
    const body = server.bodyOf(CHAT);
    expect(body.tools).toEqual(tools.map(toOpenAITool));
    expect(body.messages).toEqual(history);
    expect(body.stream).toBe(false);
    server.assertDone();
  });

  it("returns text as a TextResponse", async () => {
    server.reply(CHAT, json(completion({ content: "It is sunny." })));
    expect(await client({ mode: "native" }).send(history, tools)).toEqual({ content: "It is sunny." });
  });

  it("keeps a call with unparseable arguments, saying what was wrong in argumentsError", async () => {
    server.reply(
      CHAT,
      json(completion({ tool_calls: [{ name: "get_weather", arguments: '{"city": "Par' }] })),
    );
    const response = await client({ mode: "native" }).send(history, tools);
    expect(response).toEqual([
      { tool: "get_weather", args: {}, argumentsError: expect.stringContaining("invalid JSON") },
    ]);
    expect((response as ToolCall[])[0]?.argumentsError).toContain('received {"city": "Par');
  });

  it("treats arguments that are JSON but not an object as malformed", async () => {
    server.reply(CHAT, json(completion({ tool_calls: [{ name: "get_weather", arguments: '["Paris"]' }] })));
    const response = await client({ mode: "native" }).send(history, tools);
    expect(response).toEqual([
      { tool: "get_weather", args: {}, argumentsError: 'not a JSON object; received ["Paris"]' },
    ]);
  });

  it("reads empty arguments as no arguments", async () => {
    server.reply(CHAT, json(completion({ tool_calls: [{ name: "get_weather", arguments: "" }] })));
    expect(await client({ mode: "native" }).send(history, tools)).toEqual([
      { tool: "get_weather", args: {} },
    ]);
  });

  it("sends tool_choice only in native mode with tools", async () => {
    server.reply(CHAT, json(completion({ content: "a" })), json(completion({ content: "b" })));
    const native = client({ mode: "native", toolChoice: "required" });
    await native.send(history, tools);
    await native.send(history, []);
    expect(server.bodyOf(CHAT, 0).tool_choice).toBe("required");
    expect(server.bodyOf(CHAT, 1)).not.toHaveProperty("tool_choice");
    expect(server.bodyOf(CHAT, 1)).not.toHaveProperty("tools");
  });

  it("sends a call's SendOptions.toolChoice over the client's own", async () => {
    server.reply(
      CHAT,
      json(completion({ content: "a" })),
      json(completion({ content: "b" })),
      json(completion({ content: "c" })),
    );
    const native = client({ mode: "native", toolChoice: "auto" });
    await native.send(history, tools, { toolChoice: "required" });
    await native.send(history, tools, { toolChoice: { name: "get_weather" } });
    await native.send(history, tools);
    expect(server.bodyOf(CHAT, 0).tool_choice).toBe("required");
    expect(server.bodyOf(CHAT, 1).tool_choice).toEqual({
      type: "function",
      function: { name: "get_weather" },
    });
    expect(server.bodyOf(CHAT, 2).tool_choice).toBe("auto");
  });

  it("sends no tool_choice in prompt mode, where nothing can force a call", async () => {
    server.reply(CHAT, json(completion({ content: "a" })));
    await client({ mode: "prompt" }).send(history, tools, { toolChoice: "required" });
    expect(server.bodyOf(CHAT, 0)).not.toHaveProperty("tool_choice");
  });

  it("sends SendOptions.parallelToolCalls as parallel_tool_calls, only with native tools", async () => {
    server.reply(
      CHAT,
      json(completion({ content: "a" })),
      json(completion({ content: "b" })),
      json(completion({ content: "c" })),
    );
    const native = client({ mode: "native" });
    await native.send(history, tools, { parallelToolCalls: true });
    await native.send(history, tools);
    await native.send(history, [], { parallelToolCalls: true });
    expect(server.bodyOf(CHAT, 0).parallel_tool_calls).toBe(true);
    expect(server.bodyOf(CHAT, 1)).not.toHaveProperty("parallel_tool_calls");
    expect(server.bodyOf(CHAT, 2)).not.toHaveProperty("parallel_tool_calls");
  });

  it("sends no parallel_tool_calls in prompt mode, which sends no tools", async () => {
    server.reply(CHAT, json(completion({ content: "a" })));
    await client({ mode: "prompt" }).send(history, tools, { parallelToolCalls: true });
    expect(server.bodyOf(CHAT, 0)).not.toHaveProperty("parallel_tool_calls");
  });
});

describe("prompt mode", () => {
  const conversation = [
    { role: "system", content: "You are a weather bot." },
    { role: "user", content: "Weather in Paris?" },
    {
      role: "assistant",
      content: "",
      tool_calls: [
        { id: "c1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
      ],
    },
    { role: "tool", content: "22°C and sunny", tool_call_id: "c1", name: "get_weather" },
    { role: "user", content: "Now report it." },
  ];

  it("puts the tool prompt in the system message, downgrades the history and sends no tools", async () => {
    server.reply(
      CHAT,
      json(completion({ content: '{"tool": "report_weather", "args": {"text": "sunny"}}' })),
    );
    const response = await client({ mode: "prompt" }).send(conversation, tools);

    expect(response).toEqual([{ tool: "report_weather", args: { text: "sunny" } }]);
    const body = server.bodyOf(CHAT);
    expect(body).not.toHaveProperty("tools");
    expect(body.messages).toEqual([
      { role: "system", content: `You are a weather bot.\n\n${buildToolPrompt(tools)}` },
      { role: "user", content: "Weather in Paris?" },
      { role: "assistant", content: '{"tool":"get_weather","args":{"city":"Paris"}}' },
      { role: "user", content: "[Tool result for get_weather] 22°C and sunny\n\nNow report it." },
    ]);
  });

  it("adds a system message when the history has none", async () => {
    server.reply(CHAT, json(completion({ content: "no call here" })));
    const response = await client({ mode: "prompt" }).send([{ role: "user", content: "Hi" }], tools);

    expect(response).toEqual({ content: "no call here" });
    expect(server.bodyOf(CHAT).messages).toEqual([
      { role: "system", content: buildToolPrompt(tools) },
      { role: "user", content: "Hi" },
    ]);
  });

  it("parses a native-format call the model drifted into", async () => {
    server.reply(
      CHAT,
      json(
        completion({
          content: '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>',
        }),
      ),
    );
    expect(await client({ mode: "prompt" }).send(history, tools)).toEqual([
      { tool: "get_weather", args: { city: "Oslo" } },
    ]);
  });

  it("returns a call naming an unknown tool as text", async () => {
    server.reply(CHAT, json(completion({ content: '{"tool": "launch_rocket", "args": {}}' })));
    expect(await client({ mode: "prompt" }).send(history, tools)).toEqual({
      content: '{"tool": "launch_rocket", "args": {}}',
    });
  });
});

describe("auto mode", () => {
  it("falls back to prompt mode once when the server rejects tools, and logs it", async () => {
    server.reply(
      CHAT,
      json(errorBody(500, "tools param requires --jinja flag"), { status: 500 }),
      json(completion({ content: '{"tool": "get_weather", "args": {"city": "Paris"}}' })),
      json(completion({ content: '{"tool": "get_weather", "args": {"city": "Rome"}}' })),
    );
    const auto = client();
    expect(auto.resolvedMode).toBeUndefined();

    expect(await auto.send(history, tools)).toEqual([{ tool: "get_weather", args: { city: "Paris" } }]);
    expect(auto.resolvedMode).toBe("prompt");
    expect(await auto.send(history, tools)).toEqual([{ tool: "get_weather", args: { city: "Rome" } }]);

    const bodies = server.requestsTo(CHAT).map((request) => request.json as Record<string, unknown>);
    expect(bodies.map((body) => "tools" in body)).toEqual([true, false, false]);
    expect(logs.filter((line) => line.includes("prompt-injected"))).toHaveLength(1);
    expect(logs[0]).toContain("--jinja");
    server.assertDone();
  });

  it("also falls back on a 400 that names tools (vLLM without auto tool choice)", async () => {
    server.reply(
      CHAT,
      json(
        {
          object: "error",
          message: '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
          type: "BadRequestError",
          code: 400,
        },
        { status: 400 },
      ),
      json(completion({ content: "fine" })),
    );
    const auto = client();
    await auto.send(history, tools);
    expect(auto.resolvedMode).toBe("prompt");
  });

  it("stays native when the first call with tools succeeds", async () => {
    server.reply(
      CHAT,
      json(completion({ tool_calls: [{ name: "get_weather", arguments: '{"city":"Paris"}' }] })),
      json(errorBody(500, "tools param requires --jinja flag"), { status: 500 }),
    );
    const auto = client();
    await auto.send(history, tools);
    expect(auto.resolvedMode).toBe("native");
    // Decided once: a later rejection is an error, not a second fallback.
    await expect(auto.send(history, tools)).rejects.toBeInstanceOf(BackendError);
    expect(auto.resolvedMode).toBe("native");
  });

  it("does not decide on an unrelated error, nor on a call without tools", async () => {
    server.reply(
      CHAT,
      json(errorBody(500, "out of memory"), { status: 500 }),
      json(completion({ content: "hello" })),
    );
    const auto = client();
    await expect(auto.send(history, tools)).rejects.toMatchObject({ statusCode: 500 });
    expect(auto.resolvedMode).toBeUndefined();
    await auto.send(history, []);
    expect(auto.resolvedMode).toBeUndefined();
    expect(server.requests).toHaveLength(2);
  });

  it("does not fall back in explicit native mode", async () => {
    server.reply(CHAT, json(errorBody(500, "tools param requires --jinja flag"), { status: 500 }));
    await expect(client({ mode: "native" }).send(history, tools)).rejects.toMatchObject({
      name: "BackendError",
      statusCode: 500,
      body: expect.stringContaining("--jinja"),
    });
    expect(server.requests).toHaveLength(1);
  });
});

describe("reasoning", () => {
  it("attaches the server's reasoning_content to the first call", async () => {
    server.reply(
      CHAT,
      json(
        completion({
          reasoning_content: "The user wants Paris.",
          tool_calls: [
            { name: "get_weather", arguments: '{"city":"Paris"}' },
            { name: "get_weather", arguments: '{"city":"Nice"}' },
          ],
        }),
      ),
    );
    expect(await client({ mode: "native" }).send(history, tools)).toEqual([
      { tool: "get_weather", args: { city: "Paris" }, reasoning: "The user wants Paris." },
      { tool: "get_weather", args: { city: "Nice" } },
    ]);
  });

  it("prefers reasoning_content over think tags in the content", async () => {
    server.reply(
      CHAT,
      json(
        completion({
          reasoning_content: "server side",
          content: "<think>inline</think>",
          tool_calls: [{ name: "get_weather", arguments: "{}" }],
        }),
      ),
    );
    const [call] = (await client({ mode: "native" }).send(history, tools)) as { reasoning?: string }[];
    expect(call?.reasoning).toBe("server side");
  });

  it("extracts <think> and [THINK] blocks from the content in prompt mode", async () => {
    server.reply(
      CHAT,
      json(
        completion({
          content:
            '<think>Paris, so get_weather.</think>\n{"tool": "get_weather", "args": {"city": "Paris"}}',
        }),
      ),
      json(
        completion({
          content: '[THINK]Mistral thinks.[/THINK]{"tool": "get_weather", "args": {"city": "Rome"}}',
        }),
      ),
    );
    const prompt = client({ mode: "prompt" });
    expect(await prompt.send(history, tools)).toEqual([
      { tool: "get_weather", args: { city: "Paris" }, reasoning: "Paris, so get_weather." },
    ]);
    expect(await prompt.send(history, tools)).toEqual([
      { tool: "get_weather", args: { city: "Rome" }, reasoning: "Mistral thinks." },
    ]);
  });

  it("discards reasoning when think is false", async () => {
    server.reply(
      CHAT,
      json(
        completion({ reasoning_content: "secret", tool_calls: [{ name: "get_weather", arguments: "{}" }] }),
      ),
      json(completion({ content: '<think>secret</think>{"tool": "get_weather", "args": {}}' })),
    );
    expect(await client({ mode: "native", think: false }).send(history, tools)).toEqual([
      { tool: "get_weather", args: {} },
    ]);
    expect(await client({ mode: "prompt", think: false }).send(history, tools)).toEqual([
      { tool: "get_weather", args: {} },
    ]);
  });

  it("drops the think block from a text answer", async () => {
    server.reply(CHAT, json(completion({ content: "<think>hmm</think>\nIt is sunny." })));
    expect(await client({ mode: "native" }).send(history, tools)).toEqual({ content: "It is sunny." });
  });
});

describe("llama-server's 'Failed to parse input' (HTTP 500)", () => {
  const failure = (output: string) =>
    json(errorBody(500, `Failed to parse input at pos 12: ${output}`), { status: 500 });

  it("rescues the tool call embedded in the error instead of failing", async () => {
    server.reply(
      CHAT,
      failure(
        '<think>Need weather.</think><tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
      ),
    );
    expect(await client({ mode: "native" }).send(history, tools)).toEqual([
      { tool: "get_weather", args: { city: "Paris" }, reasoning: "Need weather." },
    ]);
  });

  it("rescues Qwen-Coder XML calls", async () => {
    server.reply(
      CHAT,
      failure(
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
      ),
    );
    expect(await client({ mode: "native" }).send(history, tools)).toEqual([
      { tool: "get_weather", args: { city: "Paris" } },
    ]);
  });

  it("returns the output as text when the call names a tool that was not offered", async () => {
    const output = '<tool_call>\n{"name": "launch_rocket", "arguments": {}}\n</tool_call>';
    server.reply(CHAT, failure(output));
    expect(await client({ mode: "native" }).send(history, tools)).toEqual({ content: output });
  });

  it("turns a newer build's parse failure (no output embedded) into text for the loop's retry", async () => {
    const message = "The model produced output that does not match the expected Hermes 2 Pro format";
    server.reply(CHAT, json(errorBody(500, message), { status: 500 }));
    expect(await client({ mode: "native" }).send(history, tools)).toEqual({ content: message });
    expect(server.requests).toHaveLength(1);
  });

  it("decides auto mode as native: the server did take the tools", async () => {
    server.reply(
      CHAT,
      failure('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'),
    );
    const auto = client();
    await auto.send(history, tools);
    expect(auto.resolvedMode).toBe("native");
    expect(server.requests).toHaveLength(1);
  });
});

describe("request fields", () => {
  it("sends slot, prompt caching, sampling, model from the GGUF stem and the API key", async () => {
    server.reply(CHAT, json(completion({ content: "ok" })));
    await client({
      ggufPath: "/models/Some-Model-Q4_K_M.gguf",
      slotId: 2,
      temperature: 0.2,
      topP: 0.9,
      topK: 40,
      minP: 0.05,
      maxTokens: 256,
      seed: 7,
      apiKey: "sk-local",
    }).send(history, [getWeather]);

    expect(server.bodyOf(CHAT)).toMatchObject({
      model: "Some-Model-Q4_K_M",
      id_slot: 2,
      cache_prompt: true,
      temperature: 0.2,
      top_p: 0.9,
      top_k: 40,
      min_p: 0.05,
      max_tokens: 256,
      seed: 7,
    });
    expect(server.requestsTo(CHAT)[0]?.headers.authorization).toBe("Bearer sk-local");
  });

  it("leaves out what was not set, and sends cache_prompt false when asked", async () => {
    server.reply(CHAT, json(completion({ content: "ok" })));
    await client({ cachePrompt: false }).send(history);
    const body = server.bodyOf(CHAT);
    expect(body.cache_prompt).toBe(false);
    for (const field of [
      "model",
      "id_slot",
      "temperature",
      "top_p",
      "top_k",
      "min_p",
      "max_tokens",
      "seed",
    ]) {
      expect(body).not.toHaveProperty(field);
    }
    expect(server.requestsTo(CHAT)[0]?.headers.authorization).toBeUndefined();
  });

  it("prefers an explicit model over the GGUF stem", async () => {
    server.reply(CHAT, json(completion({ content: "ok" })));
    const named = client({ model: "served-name", ggufPath: "x/Other-Q8_0.gguf" });
    await named.send(history);
    expect(named.model).toBe("served-name");
    expect(server.bodyOf(CHAT).model).toBe("served-name");
  });
});

describe("getContextLength (GET /props)", () => {
  it("reads default_generation_settings.n_ctx, with /v1 stripped from the base URL", async () => {
    server.reply(
      "GET /props",
      json({ default_generation_settings: { n_ctx: 8192, temperature: 0.8 }, total_slots: 1 }),
    );
    expect(await client().getContextLength()).toBe(8192);
    server.assertDone();
  });

  it("accepts a top-level n_ctx", async () => {
    server.reply("GET /props", json({ n_ctx: 4096, total_slots: 4 }));
    expect(await client().getContextLength()).toBe(4096);
  });

  it("is null for a server without /props (404)", async () => {
    server.reply("GET /props", raw("Not Found", { status: 404 }));
    expect(await client().getContextLength()).toBeNull();
  });

  it("throws ContextDiscoveryError for malformed JSON or a missing n_ctx", async () => {
    server.reply(
      "GET /props",
      raw("{not json", { contentType: "application/json" }),
      json({ total_slots: 1 }),
    );
    await expect(client().getContextLength()).rejects.toBeInstanceOf(ContextDiscoveryError);
    await expect(client().getContextLength()).rejects.toThrow(/n_ctx/);
  });

  it("throws BackendError for other HTTP errors", async () => {
    server.reply("GET /props", raw("unauthorized", { status: 401 }));
    await expect(client().getContextLength()).rejects.toMatchObject({
      statusCode: 401,
      body: "unauthorized",
    });
  });
});
