/**
 * The official `openai` client's Responses API (`client.responses.create`, `client.responses.stream`)
 * against the proxy on 127.0.0.1, in front of a scripted chat-completions backend: plain, streamed,
 * and a function-tool round trip, whatever the model writes.
 */
import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { RunningProxy } from "../../src/proxy/server.ts";
import { openAIClientFor, startTestProxy } from "./helpers/proxy-fixture.ts";
import {
  type ScriptedBackend,
  startScriptedBackend,
  textCompletion,
  toolCallCompletion,
} from "./helpers/scripted-backend.ts";

let backend: ScriptedBackend;
let proxy: RunningProxy;
let client: OpenAI;

beforeAll(async () => {
  backend = await startScriptedBackend();
  proxy = await startTestProxy({ backendUrl: backend.url });
  client = openAIClientFor(proxy);
});

afterEach(() => {
  backend.assertDone();
  backend.requests.length = 0;
});

afterAll(async () => {
  await proxy.close();
  await backend.close();
});

const weatherTool: OpenAI.Responses.FunctionTool = {
  type: "function",
  name: "get_weather",
  description: "Current weather for a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  strict: true,
};

type WireMessage = { role: string; content: string | null; tool_calls?: unknown[]; tool_call_id?: string };
const sentMessages = (index: number) => backend.chatRequests[index]?.body.messages as WireMessage[];

describe("openai SDK, responses.create", () => {
  it("answers a plain request, which the SDK reads as output_text", async () => {
    backend.push(textCompletion("Hello from the model."));
    const response = await client.responses.create({
      model: "qwen3",
      instructions: "Be friendly.",
      input: "Say hello.",
      max_output_tokens: 64,
      store: false,
    });
    expect(response.object).toBe("response");
    expect(response.status).toBe("completed");
    expect(response.output_text).toBe("Hello from the model.");
    expect(response.usage?.total_tokens).toBeGreaterThan(0);
    const sent = backend.chatRequests[0]?.body;
    expect(sent).toMatchObject({ model: "qwen3", max_tokens: 64, stream: false });
    expect(sent?.store).toBeUndefined();
    expect(sentMessages(0)).toEqual([
      { role: "system", content: "Be friendly." },
      { role: "user", content: "Say hello." },
    ]);
  });

  it("returns a call the model wrote as text as a function_call, then answers its function_call_output", async () => {
    backend.push(
      textCompletion('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'),
    );
    const input: OpenAI.Responses.ResponseInputItem[] = [{ role: "user", content: "Weather in Oslo?" }];
    const first = await client.responses.create({ model: "qwen3", input, tools: [weatherTool] });
    const call = first.output.find((item) => item.type === "function_call");
    if (call?.type !== "function_call") throw new Error("expected a function_call item");
    expect(call.name).toBe("get_weather");
    expect(JSON.parse(call.arguments)).toEqual({ city: "Oslo" });
    expect(call.call_id).toMatch(/^call_/);
    expect(first.output_text).toBe("");

    backend.push(toolCallCompletion([{ name: "respond", args: { message: "It is 4°C in Oslo." } }]));
    const second = await client.responses.create({
      model: "qwen3",
      tools: [weatherTool],
      input: [
        ...input,
        ...(first.output as OpenAI.Responses.ResponseInputItem[]),
        { type: "function_call_output", call_id: call.call_id, output: "4°C" },
      ],
    });
    expect(second.output_text).toBe("It is 4°C in Oslo.");
    const sent = sentMessages(1);
    expect(sent.map((message) => message.role)).toEqual(["user", "assistant", "tool"]);
    expect(sent[1]?.tool_calls).toEqual([
      { id: call.call_id, type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } },
    ]);
    expect(sent[2]).toMatchObject({ tool_call_id: call.call_id, content: "4°C" });
  });

  it("raises BadRequestError for previous_response_id: the proxy is stateless", async () => {
    const error = await client.responses
      .create({ model: "qwen3", input: "And tomorrow?", previous_response_id: "resp_abc" })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    const badRequest = error as InstanceType<typeof OpenAI.BadRequestError>;
    expect(badRequest.status).toBe(400);
    expect(badRequest.param).toBe("previous_response_id");
    expect(badRequest.message).toContain("stateless");
    expect(backend.chatRequests).toEqual([]);
  });
});

describe("openai SDK, streamed responses", () => {
  it("streams the event sequence the SDK parses, with the final text in the deltas and response.completed", async () => {
    backend.push(toolCallCompletion([{ name: "respond", args: { message: "Streamed hello." } }]));
    const stream = await client.responses.create({
      model: "qwen3",
      input: "hi",
      tools: [weatherTool],
      stream: true,
    });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    expect(events.map((event) => event.type)).toEqual([
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
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    const text = events
      .map((event) => (event.type === "response.output_text.delta" ? event.delta : ""))
      .join("");
    expect(text).toBe("Streamed hello.");
    const completed = events.at(-1);
    if (completed?.type !== "response.completed") throw new Error("expected response.completed last");
    expect(completed.response.output).toEqual([
      expect.objectContaining({
        type: "message",
        content: [expect.objectContaining({ text: "Streamed hello." })],
      }),
    ]);
    expect(completed.response.usage?.total_tokens).toBeGreaterThan(0);
    expect(backend.chatRequests[0]?.body.stream).toBe(true);
  });

  it("streams a function call that the SDK's stream helper accumulates into the final response", async () => {
    backend.push(toolCallCompletion([{ name: "get_weather", args: { city: "Lima" } }]));
    const runner = client.responses.stream({
      model: "qwen3",
      input: "Weather in Lima?",
      tools: [weatherTool],
    });
    const argumentDeltas: string[] = [];
    runner.on("response.function_call_arguments.delta", (event) => argumentDeltas.push(event.delta));
    const final = await runner.finalResponse();
    expect(final.status).toBe("completed");
    const call = final.output.find((item) => item.type === "function_call");
    if (call?.type !== "function_call") throw new Error("expected a function_call item");
    expect(call).toMatchObject({
      name: "get_weather",
      status: "completed",
      call_id: expect.stringMatching(/^call_/),
    });
    expect(JSON.parse(call.arguments)).toEqual({ city: "Lima" });
    expect(JSON.parse(argumentDeltas.join(""))).toEqual({ city: "Lima" });
  });

  it("streams the model's reasoning as a reasoning item the stream helper accumulates, before the call", async () => {
    const reply = toolCallCompletion([{ name: "get_weather", args: { city: "Quito" } }]);
    const body = reply.body as { choices: { message: Record<string, unknown> }[] };
    body.choices[0]!.message.reasoning_content = "The user wants Quito's weather.";
    backend.push(reply);
    const final = await client.responses
      .stream({ model: "qwen3", input: "Weather in Quito?", tools: [weatherTool] })
      .finalResponse();
    expect(final.output.map((item) => item.type)).toEqual(["reasoning", "function_call"]);
    const reasoning = final.output[0];
    if (reasoning?.type !== "reasoning") throw new Error("expected a reasoning item first");
    expect(reasoning.content).toEqual([{ type: "reasoning_text", text: "The user wants Quito's weather." }]);
  });
});
