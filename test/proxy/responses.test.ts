/**
 * The Responses route in-process (`app.request()`), with a ScriptedClient behind it: what the
 * input items, tools and settings become on the guarded path, and the `response` object and SSE
 * events the answer is rendered as.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createProxy } from "../../src/proxy/app.ts";
import { IMAGE_PLACEHOLDER } from "../../src/proxy/proxy-request.ts";
import { text, toolCall } from "../../src/testing/index.ts";
import { createFakeBackend } from "./helpers/fake-backend.ts";

const search = {
  type: "function",
  name: "search",
  description: "Search the web",
  parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
  strict: true,
};

const json = (body: unknown) => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});

/** The parts of a `response` object these tests read. */
interface ResponseBody {
  id: string;
  object: string;
  status: string;
  model: string;
  output: Record<string, unknown>[];
  usage: { input_tokens: number; output_tokens: number; total_tokens: number };
  tools: unknown[];
  tool_choice: unknown;
}
const bodyOf = async (response: Response) => (await response.json()) as ResponseBody;

/** The SSE body as `{ event, data }` pairs. */
async function eventsOf(response: Response): Promise<{ event: string; data: Record<string, unknown> }[]> {
  const raw = await response.text();
  return raw
    .split("\n\n")
    .filter((block) => block.trim().length > 0)
    .map((block) => {
      const event = /^event: (.+)$/m.exec(block)?.[1] ?? "";
      const data = JSON.parse(/^data: (.+)$/m.exec(block)?.[1] ?? "null") as Record<string, unknown>;
      return { event, data };
    });
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("POST /v1/responses in-process, answers", () => {
  it("returns a tool call as a function_call item, after the model's reasoning", async () => {
    const backend = createFakeBackend([toolCall("search", { query: "xstate" }, "I should search.")]);
    const response = await createProxy({ backend }).request(
      "/v1/responses",
      json({ model: "m", instructions: "Be brief.", input: "find xstate", tools: [search] }),
    );
    expect(response.status).toBe(200);
    const body = await bodyOf(response);
    expect(body).toMatchObject({ object: "response", status: "completed", model: "m" });
    expect(body.id).toMatch(/^resp_/);
    expect(body.output).toEqual([
      {
        type: "reasoning",
        id: expect.stringMatching(/^rs_/),
        summary: [],
        content: [{ type: "reasoning_text", text: "I should search." }],
        status: "completed",
      },
      {
        type: "function_call",
        id: expect.stringMatching(/^fc_/),
        call_id: expect.stringMatching(/^call_/),
        name: "search",
        arguments: '{"query":"xstate"}',
        status: "completed",
      },
    ]);
    expect(body.usage.input_tokens).toBeGreaterThan(0);
    expect(body.usage.total_tokens).toBe(body.usage.input_tokens + body.usage.output_tokens);
    expect(body.tools).toEqual([search]);
    // The guarded path: the client's tool plus respond, instructions as the system message.
    const call = backend.scripted.calls[0]!;
    expect(call.tools.map((tool) => tool.name)).toEqual(["search", "respond"]);
    expect(call.messages).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: "find xstate" },
    ]);
    backend.scripted.assertDone();
  });

  it("returns a respond call as a message with one output_text part", async () => {
    const backend = createFakeBackend([toolCall("respond", { message: "Hello." })]);
    const body = await bodyOf(
      await createProxy({ backend }).request("/responses", json({ input: "hi", tools: [search] })),
    );
    expect(body.model).toBe("default");
    expect(body.output).toEqual([
      {
        type: "message",
        id: expect.stringMatching(/^msg_/),
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: "Hello.", annotations: [], logprobs: [] }],
      },
    ]);
  });

  it("answers a request without tools through the chat service too, with the model's text", async () => {
    const backend = createFakeBackend([text("Plain answer.")]);
    const body = await bodyOf(
      await createProxy({ backend }).request("/v1/responses", json({ model: "m", input: "hello" })),
    );
    expect(body.output).toHaveLength(1);
    expect(body.output[0]).toMatchObject({ type: "message", content: [{ text: "Plain answer." }] });
    expect(backend.scripted.calls[0]?.tools).toEqual([]);
    expect(backend.forwarded).toEqual([]);
  });

  it("answers prose after the nudges as the answer when tool_choice is auto, saying the guardrail gave up", async () => {
    const backend = createFakeBackend([text("prose"), text("prose"), text("prose")]);
    const response = await createProxy({ backend, maxRetries: 2, prosePolicy: "nudge" }).request(
      "/v1/responses",
      json({ input: "q", tools: [search] }),
    );
    expect(response.status).toBe(200);
    expect(response.headers.get("x-forge-guardrail")).toBe("gave-up");
    expect(JSON.stringify(await response.json())).toContain('"text":"prose"');
  });

  it("answers a model that never calls a required tool with a 422 (not retried) in the OpenAI error shape", async () => {
    const backend = createFakeBackend([text("prose"), text("prose"), text("prose")]);
    const response = await createProxy({ backend, maxRetries: 2 }).request(
      "/v1/responses",
      json({ input: "q", tools: [search], tool_choice: "required" }),
    );
    expect(response.status).toBe(422);
    expect(response.headers.get("x-should-retry")).toBe("false");
    const body = (await response.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({
      type: "server_error",
      code: "retries_exhausted",
      raw_response: "prose",
    });
  });
});

describe("POST /v1/responses in-process, input items", () => {
  it("turns messages, reasoning, function calls and their outputs into one chat history", async () => {
    const backend = createFakeBackend([toolCall("respond", { message: "22°C." })]);
    const app = createProxy({ backend, reasoningReplay: "full" });
    const response = await app.request(
      "/v1/responses",
      json({
        tools: [search],
        input: [
          { role: "developer", content: "Use tools." },
          { type: "message", role: "system", content: [{ type: "input_text", text: "Be exact." }] },
          {
            role: "user",
            content: [
              { type: "input_text", text: "Weather" },
              { type: "input_text", text: "in Paris?" },
            ],
          },
          {
            type: "reasoning",
            id: "rs_1",
            summary: [],
            content: [{ type: "reasoning_text", text: "Look it up." }],
          },
          {
            type: "reasoning",
            id: "rs_2",
            summary: [{ type: "summary_text", text: "hidden" }],
            encrypted_content: "x",
          },
          {
            type: "message",
            role: "assistant",
            content: [{ type: "output_text", text: "Checking.", annotations: [] }],
          },
          { type: "function_call", call_id: "call_1", name: "search", arguments: '{"query":"paris"}' },
          { type: "function_call", call_id: "call_2", name: "search", arguments: '{"query":"weather"}' },
          { type: "function_call_output", call_id: "call_1", output: "22°C" },
          {
            type: "function_call_output",
            call_id: "call_2",
            output: [{ type: "input_text", text: "sunny" }],
          },
        ],
      }),
    );
    expect(response.status).toBe(200);
    const sent = backend.scripted.calls[0]!.messages;
    expect(sent.map((message) => message.role)).toEqual([
      "system",
      "system",
      "user",
      "assistant",
      "tool",
      "tool",
    ]);
    expect(sent[2]).toMatchObject({ content: "Weather\nin Paris?" });
    // One assistant turn: its text, both calls, and (replayed in full) its readable reasoning only.
    expect(sent[3]).toMatchObject({
      tool_calls: [
        { id: "call_1", type: "function", function: { name: "search", arguments: '{"query":"paris"}' } },
        { id: "call_2", type: "function", function: { name: "search", arguments: '{"query":"weather"}' } },
      ],
    });
    expect(JSON.stringify(sent[3])).toContain("Look it up.");
    expect(JSON.stringify(sent[3])).toContain("Checking.");
    expect(JSON.stringify(sent)).not.toContain("hidden");
    expect(sent[4]).toMatchObject({ tool_call_id: "call_1", content: "22°C" });
    expect(sent[5]).toMatchObject({ tool_call_id: "call_2", content: "sunny" });
  });

  it("refuses previous_response_id with a 400 saying the proxy is stateless", async () => {
    const backend = createFakeBackend([]);
    const response = await createProxy({ backend }).request(
      "/v1/responses",
      json({ input: "and then?", previous_response_id: "resp_123" }),
    );
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({
      type: "invalid_request_error",
      code: "invalid_request",
      param: "previous_response_id",
    });
    expect(body.error.message).toMatch(/stateless.*send the whole conversation in `input`/);
    expect(backend.scripted.calls).toEqual([]);
  });

  it.each([
    [{ input: [{ type: "item_reference", id: "msg_1" }] }, "input[0].type", /stateless.*`store: false`/],
    [
      { input: [{ type: "custom_tool_call_output", call_id: "c", output: "x" }] },
      "input[0].type",
      /'custom_tool_call_output'/,
    ],
    [
      {
        input: [
          { role: "user", content: "q" },
          { type: "function_call", name: "search", arguments: "{}" },
        ],
      },
      "input[1].call_id",
      /expected string/,
    ],
    [
      { input: [{ type: "function_call", call_id: "c", name: "s", arguments: "[1]" }] },
      "input[0].arguments",
      /JSON object/,
    ],
    [
      { input: [{ role: "user", content: [{ type: "input_file", file_id: "x" }] }] },
      "input[0].content[0].type",
      /input_file/,
    ],
    [
      { input: "q", tools: [{ type: "function", name: "bad name", parameters: null }] },
      "tools[0].name",
      /tool names/,
    ],
    [{ input: "q", tools: [{ ...search, parameters: { type: "array" } }] }, "tools[0].parameters", /object/],
    [{ input: [] }, "input", /./],
    [{ model: "m" }, "input", /required/],
    [
      { input: "q", tools: [search, { type: "namespace", name: "n", description: "", tools: [search] }] },
      "tools[1].tools[0].name",
      /second function named 'search'/,
    ],
    [{ previous_response_id: "resp_1" }, "previous_response_id", /stateless/],
    [{ input: "q", conversation: "conv_1" }, "conversation", /stateless/],
  ])("answers %j with a 400 naming %s", async (body, param, message) => {
    const backend = createFakeBackend([]);
    const response = await createProxy({ backend }).request("/v1/responses", json(body));
    expect(response.status).toBe(400);
    const error = ((await response.json()) as { error: { param: string; message: string } }).error;
    expect(error.param).toBe(param);
    expect(error.message).toMatch(message);
  });
});

describe("POST /v1/responses in-process, tools and settings", () => {
  it("replaces an input_image part with the placeholder, as the other routes do", async () => {
    const backend = createFakeBackend([toolCall("respond", { message: "ok" })]);
    const response = await createProxy({ backend }).request(
      "/v1/responses",
      json({
        input: [
          {
            role: "user",
            content: [
              { type: "input_text", text: "What is in it?" },
              { type: "input_image", image_url: "data:image/png;base64,AAAA" },
            ],
          },
        ],
        tools: [search],
      }),
    );
    expect(response.status).toBe(200);
    const sent = backend.scripted.calls[0]?.messages ?? [];
    expect(sent.at(-1)).toMatchObject({ role: "user", content: `What is in it?\n${IMAGE_PLACEHOLDER}` });
  });

  it("flattens a namespace's functions, names the namespace on the call, and skips tools it cannot serve once each", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const backend = createFakeBackend([
      toolCall("read_file", { path: "a" }),
      toolCall("respond", { message: "ok" }),
    ]);
    const app = createProxy({ backend });
    const body = {
      input: "read a",
      tools: [
        { type: "web_search" },
        search,
        {
          type: "namespace",
          name: "mcp__files",
          description: "File tools",
          tools: [
            {
              type: "function",
              name: "read_file",
              parameters: { type: "object", properties: { path: { type: "string" } } },
            },
            { type: "custom", name: "apply_patch", format: { type: "grammar" } },
          ],
        },
        { type: "custom", name: "apply_patch" },
        { type: "web_search" },
      ],
    };
    const first = await bodyOf(await app.request("/v1/responses", json(body)));
    await app.request("/v1/responses", json(body));
    expect(backend.scripted.calls[0]?.tools.map((tool) => tool.name)).toEqual([
      "search",
      "read_file",
      "respond",
    ]);
    expect(first.output).toEqual([
      expect.objectContaining({
        type: "function_call",
        name: "read_file",
        namespace: "mcp__files",
        arguments: '{"path":"a"}',
      }),
    ]);
    // One line per skipped type per proxy, however many requests carry it.
    expect(warn.mock.calls.map((call) => call[0])).toEqual([
      expect.stringContaining('"web_search"'),
      expect.stringContaining('"namespace.custom"'),
      expect.stringContaining('"custom"'),
    ]);
  });

  it("maps tool_choice, max_output_tokens and text.format, forwards sampling fields and drops OpenAI-only ones", async () => {
    const backend = createFakeBackend([
      toolCall("search", {}),
      toolCall("search", {}),
      toolCall("search", {}),
      text("no tools"),
    ]);
    const app = createProxy({ backend });
    const base = { model: "m", input: "q", tools: [search] };
    await app.request(
      "/v1/responses",
      json({
        ...base,
        tool_choice: "required",
        max_output_tokens: 99,
        temperature: 0.2,
        top_p: 0.9,
        parallel_tool_calls: false,
        top_k: 20,
        store: true,
        include: ["reasoning.encrypted_content"],
        reasoning: { effort: "low" },
        prompt_cache_key: "k",
        metadata: { a: "b" },
        text: { format: { type: "json_schema", name: "answer", schema: { type: "object" }, strict: true } },
      }),
    );
    await app.request("/v1/responses", json({ ...base, tool_choice: { type: "function", name: "search" } }));
    await app.request("/v1/responses", json({ ...base, tool_choice: { type: "web_search_preview" } }));
    await app.request("/v1/responses", json({ ...base, tool_choice: "none", parallel_tool_calls: true }));
    expect(backend.calls[0]?.extraBody).toEqual({
      tool_choice: "required",
      max_tokens: 99,
      temperature: 0.2,
      top_p: 0.9,
      parallel_tool_calls: false,
      top_k: 20,
      response_format: {
        type: "json_schema",
        json_schema: { name: "answer", schema: { type: "object" }, strict: true },
      },
    });
    expect(backend.calls[1]?.extraBody).toEqual({
      tool_choice: { type: "function", function: { name: "search" } },
    });
    expect(backend.calls[2]?.extraBody).toEqual({});
    // tool_choice none: no tools offered, nothing about tools forwarded.
    expect(backend.calls[3]?.extraBody).toEqual({});
    expect(backend.scripted.calls[3]?.tools).toEqual([]);
    backend.scripted.assertDone();
  });
});

describe("POST /v1/responses in-process, a Codex-shaped turn", () => {
  it("serves a request shaped as Codex CLI sends it: its function tool called, the rest skipped, OpenAI-only fields dropped", async () => {
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const shell = {
      type: "function",
      name: "shell",
      description: "Runs a shell command and returns its output.",
      strict: false,
      parameters: {
        type: "object",
        properties: { command: { type: "array", items: { type: "string" } }, workdir: { type: "string" } },
        required: ["command"],
        additionalProperties: false,
      },
    };
    const backend = createFakeBackend([toolCall("shell", { command: ["ls"] }, "List the files first.")]);
    const response = await createProxy({ backend }).request(
      "/v1/responses",
      json({
        model: "qwen3-coder",
        instructions: "You are Codex, a coding agent.",
        input: [
          {
            type: "message",
            role: "developer",
            content: [{ type: "input_text", text: "<permissions instructions>" }],
          },
          { type: "message", role: "user", content: [{ type: "input_text", text: "<environment_context>" }] },
          {
            type: "message",
            role: "user",
            content: [{ type: "input_text", text: "What is in this folder?" }],
          },
        ],
        tools: [
          shell,
          { type: "local_shell" },
          { type: "web_search", external_web_access: false },
          {
            type: "custom",
            name: "apply_patch",
            description: "Edit files",
            format: { type: "grammar", syntax: "lark", definition: "start: x" },
          },
        ],
        tool_choice: "auto",
        parallel_tool_calls: false,
        reasoning: { effort: "medium", summary: "auto" },
        store: false,
        stream: true,
        include: ["reasoning.encrypted_content"],
        prompt_cache_key: "0199e3c0-session",
        text: { verbosity: "medium" },
      }),
    );
    expect(response.status).toBe(200);
    const events = await eventsOf(response);
    const done = events
      .filter((event) => event.event === "response.output_item.done")
      .map((event) => event.data.item);
    expect(done).toEqual([
      expect.objectContaining({
        type: "reasoning",
        content: [{ type: "reasoning_text", text: "List the files first." }],
      }),
      expect.objectContaining({ type: "function_call", name: "shell", arguments: '{"command":["ls"]}' }),
    ]);
    expect(events.at(-1)?.event).toBe("response.completed");
    const call = backend.calls[0]!;
    expect(call.model).toBe("qwen3-coder");
    expect(call.extraBody).toEqual({ tool_choice: "auto", parallel_tool_calls: false });
    const sent = backend.scripted.calls[0]!;
    expect(sent.tools.map((tool) => tool.name)).toEqual(["shell", "respond"]);
    expect(sent.messages.map((message) => message.role)).toEqual(["system", "system", "user", "user"]);
  });
});

describe("POST /v1/responses in-process, streaming", () => {
  it("streams a message from response.created to response.completed, every event numbered", async () => {
    const backend = createFakeBackend([toolCall("respond", { message: "Hello there." })]);
    const response = await createProxy({ backend }).request(
      "/v1/responses",
      json({ model: "m", input: "hi", tools: [search], stream: true }),
    );
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    const events = await eventsOf(response);
    expect(events.map((event) => event.event)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    events.forEach((event, index) => {
      expect(event.data.type).toBe(event.event);
      expect(event.data.sequence_number).toBe(index);
    });
    const byType = (type: string) => events.find((event) => event.event === type)?.data ?? {};
    expect(byType("response.created").response).toMatchObject({
      status: "in_progress",
      output: [],
      usage: null,
    });
    const itemId = (byType("response.output_item.added").item as { id: string }).id;
    expect(byType("response.output_text.delta")).toMatchObject({
      item_id: itemId,
      output_index: 0,
      content_index: 0,
      delta: "Hello there.",
    });
    expect(byType("response.output_text.done")).toMatchObject({ text: "Hello there." });
    const completed = byType("response.completed").response as ResponseBody;
    expect(completed.id).toBe((byType("response.created").response as ResponseBody).id);
    expect(completed.status).toBe("completed");
    expect(completed.output[0]).toMatchObject({ id: itemId, content: [{ text: "Hello there." }] });
    expect(completed.usage.total_tokens).toBeGreaterThan(0);
  });

  it("streams reasoning, then each function call's arguments, in output order", async () => {
    const backend = createFakeBackend([
      [
        { tool: "search", args: { query: "a" }, reasoning: "Two searches." },
        { tool: "search", args: { query: "b" } },
      ],
    ]);
    const events = await eventsOf(
      await createProxy({ backend }).request(
        "/v1/responses",
        json({ input: "q", tools: [search], stream: true }),
      ),
    );
    expect(events.map((event) => `${event.event}@${String(event.data.output_index ?? "")}`)).toEqual([
      "response.created@",
      "response.in_progress@",
      "response.output_item.added@0",
      "response.content_part.added@0",
      "response.reasoning_text.delta@0",
      "response.reasoning_text.done@0",
      "response.content_part.done@0",
      "response.output_item.done@0",
      "response.output_item.added@1",
      "response.function_call_arguments.delta@1",
      "response.function_call_arguments.done@1",
      "response.output_item.done@1",
      "response.output_item.added@2",
      "response.function_call_arguments.delta@2",
      "response.function_call_arguments.done@2",
      "response.output_item.done@2",
      "response.completed@",
    ]);
    const added = events[8]!.data.item as Record<string, unknown>;
    expect(added).toMatchObject({
      type: "function_call",
      status: "in_progress",
      arguments: "",
      name: "search",
    });
    expect(events[10]!.data).toMatchObject({ name: "search", arguments: '{"query":"a"}', item_id: added.id });
    expect(events[15]!.data.item).toMatchObject({ status: "completed", arguments: '{"query":"b"}' });
  });
});
