/**
 * The clients driven by the real WorkflowRunner, against a local HTTP server replaying the
 * backends' wire shapes: what the loop serializes is what each backend accepts, and what the
 * clients return is what the loop runs.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OllamaClient } from "../../src/clients/ollama/client.ts";
import { OpenAICompatibleClient } from "../../src/clients/openai/compatible-client.ts";
import { BackendError, StreamError } from "../../src/core/errors.ts";
import { ChunkType, type StreamChunk } from "../../src/core/types.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { createPassthrough, weatherWorkflow } from "../helpers/workflows.ts";
import { CHAT, chunk, completion, errorBody } from "./helpers/openai-shapes.ts";
import { json, ReplayServer, raw, sse } from "./helpers/replay-server.ts";

let server: ReplayServer;

beforeEach(async () => {
  server = await ReplayServer.start();
});
afterEach(async () => {
  await server.close();
});

describe("OpenAICompatibleClient in the loop", () => {
  it("runs a workflow natively; the tool result goes back with its call id", async () => {
    server.reply(
      CHAT,
      json(
        completion({
          reasoning_content: "Look it up first.",
          tool_calls: [{ id: "call_7", name: "get_weather", arguments: '{"city": "Paris"}' }],
        }),
      ),
      json(
        completion({
          tool_calls: [{ name: "report_weather", arguments: '{"city": "Paris", "weather": "sunny"}' }],
        }),
      ),
    );
    const { workflow, executed } = weatherWorkflow();
    const client = new OpenAICompatibleClient({
      baseUrl: `${server.url}/v1`,
      mode: "native",
      logger: () => {},
    });
    const runner = new WorkflowRunner({ client, contextManager: createPassthrough() });

    const result = await runner.run(workflow, "Weather in Paris?", { promptVars: { user: "Ann" } });

    expect(result).toEqual({ reported: "Paris: sunny" });
    expect(executed).toEqual(["get_weather:Paris", "report_weather:Paris"]);
    const second = server.bodyOf(CHAT, 1).messages as Record<string, unknown>[];
    const call = second.find((message) => Array.isArray(message.tool_calls));
    const toolResult = second.find((message) => message.role === "tool");
    expect(call?.content).toContain("Look it up first.");
    expect(toolResult).toMatchObject({
      role: "tool",
      name: "get_weather",
      content: expect.stringContaining("22°C"),
    });
    const [sentCall] = (call?.tool_calls ?? []) as { id: string }[];
    expect(sentCall?.id).toEqual(expect.any(String));
    expect(toolResult?.tool_call_id).toBe(sentCall?.id);
    server.assertDone();
  });

  it("streams a workflow after falling back to prompt mode", async () => {
    server.reply(
      CHAT,
      json(errorBody(500, "tools param requires --jinja flag"), { status: 500 }),
      sse([
        chunk({ content: '{"tool": "get_weather", "args": {"city": "Oslo"}}' }),
        chunk({}, "stop"),
        "[DONE]",
      ]),
      sse([
        chunk({ content: '{"tool": "report_weather", ' }),
        chunk({ content: '"args": {"city": "Oslo", "weather": "cold"}}' }),
        chunk({}, "stop"),
        "[DONE]",
      ]),
    );
    const { workflow } = weatherWorkflow();
    const client = new OpenAICompatibleClient({ baseUrl: `${server.url}/v1`, logger: () => {} });
    const runner = new WorkflowRunner({ client, contextManager: createPassthrough(), stream: true });

    expect(await runner.run(workflow, "Weather in Oslo?", { promptVars: { user: "Bo" } })).toEqual({
      reported: "Oslo: cold",
    });
    expect(client.resolvedMode).toBe("prompt");
    const last = server.bodyOf(CHAT, 2).messages as { role: string; content: string }[];
    expect(last.map((message) => message.role)).toEqual(["system", "user", "assistant", "user"]);
    expect(last[3]?.content).toMatch(/^\[Tool result for get_weather\] /);
  });
});

describe("client retries in the loop", () => {
  const getWeatherStream = [
    chunk({
      tool_calls: [
        { index: 0, id: "c1", type: "function", function: { name: "get_weather", arguments: "" } },
      ],
    }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city": ' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '"Rome"}' } }] }),
    chunk({}, "tool_calls"),
    "[DONE]",
  ];
  const reportStream = sse([
    chunk({
      tool_calls: [
        {
          index: 0,
          id: "c2",
          type: "function",
          function: { name: "report_weather", arguments: '{"city": "Rome", "weather": "warm"}' },
        },
      ],
    }),
    chunk({}, "tool_calls"),
    "[DONE]",
  ]);
  function retryingClient(options: { streamRetries?: number } = {}) {
    return new OpenAICompatibleClient({
      baseUrl: `${server.url}/v1`,
      mode: "native",
      logger: () => {},
      retryBaseMs: 5,
      retryMaxMs: 20,
      ...options,
    });
  }

  it("runs on after a stream cut mid-call: onChunk sees RETRY, the tool runs once with whole arguments", async () => {
    server.reply(
      CHAT,
      sse(getWeatherStream.slice(0, 2), { end: "drop" }),
      sse(getWeatherStream),
      reportStream,
    );
    const { workflow, executed } = weatherWorkflow();
    const seen: StreamChunk[] = [];
    const runner = new WorkflowRunner({
      client: retryingClient(),
      contextManager: createPassthrough(),
      stream: true,
      onChunk: (item) => {
        seen.push(item);
      },
    });

    expect(await runner.run(workflow, "Weather in Rome?", { promptVars: { user: "Di" } })).toEqual({
      reported: "Rome: warm",
    });
    expect(executed).toEqual(["get_weather:Rome", "report_weather:Rome"]);
    const types = seen.map((item) => item.type);
    expect(types.filter((type) => type === ChunkType.RETRY)).toHaveLength(1);
    expect(types.indexOf(ChunkType.RETRY)).toBeLessThan(types.indexOf(ChunkType.FINAL));
    expect(server.requestsTo(CHAT)).toHaveLength(3);
  });

  it("runs on after a transient 503", async () => {
    server.reply(
      CHAT,
      raw("Loading model", { status: 503 }),
      json(completion({ tool_calls: [{ name: "get_weather", arguments: '{"city": "Rome"}' }] })),
      json(
        completion({
          tool_calls: [{ name: "report_weather", arguments: '{"city": "Rome", "weather": "warm"}' }],
        }),
      ),
    );
    const { workflow } = weatherWorkflow();
    const runner = new WorkflowRunner({ client: retryingClient(), contextManager: createPassthrough() });
    expect(await runner.run(workflow, "Weather in Rome?", { promptVars: { user: "Di" } })).toEqual({
      reported: "Rome: warm",
    });
    expect(server.requestsTo(CHAT)).toHaveLength(3);
  });

  it("fails the run with the typed StreamError once the stream retries are spent", async () => {
    const broken = sse(getWeatherStream.slice(0, 2), { end: "drop" });
    server.reply(CHAT, broken, broken);
    const { workflow, executed } = weatherWorkflow();
    const runner = new WorkflowRunner({
      client: retryingClient({ streamRetries: 1 }),
      contextManager: createPassthrough(),
      stream: true,
    });
    const error = await runner
      .run(workflow, "Weather in Rome?", { promptVars: { user: "Di" } })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StreamError);
    expect(error).not.toBeInstanceOf(BackendError);
    expect(executed).toEqual([]);
    expect(server.requestsTo(CHAT)).toHaveLength(2);
  });
});

describe("OllamaClient in the loop", () => {
  it("runs a workflow with Ollama's wire (object arguments, tool_name on results)", async () => {
    const answer = (name: string, args: Record<string, unknown>) =>
      json({
        message: { role: "assistant", content: "", tool_calls: [{ function: { name, arguments: args } }] },
        done: true,
      });
    server.reply(
      "POST /api/chat",
      answer("get_weather", { city: "Lima" }),
      answer("report_weather", { city: "Lima", weather: "mild" }),
    );
    const { workflow } = weatherWorkflow();
    const client = new OllamaClient({ model: "llama3.2", baseUrl: server.url, logger: () => {} });
    const runner = new WorkflowRunner({ client, contextManager: createPassthrough() });

    expect(await runner.run(workflow, "Weather in Lima?", { promptVars: { user: "Cy" } })).toEqual({
      reported: "Lima: mild",
    });
    const second = server.bodyOf("POST /api/chat", 1).messages as Record<string, unknown>[];
    expect(second.find((message) => message.role === "tool")).toMatchObject({ tool_name: "get_weather" });
    expect(second.find((message) => Array.isArray(message.tool_calls))?.tool_calls).toEqual([
      { function: { name: "get_weather", arguments: { city: "Lima" } } },
    ]);
  });
});
