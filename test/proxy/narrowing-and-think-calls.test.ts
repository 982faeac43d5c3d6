/**
 * Tool-set narrowing (ADR 028) and calls inside unclosed reasoning (ADR 027) through real HTTP:
 * the official `openai` client → the proxy on 127.0.0.1 → a scripted OpenAI-compatible backend
 * that records what it was sent. Both are counted in the access log.
 */
import type OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { RunningProxy } from "../../src/proxy/server.ts";
import { openAIClientFor, startTestProxy, weatherToolOpenAI } from "./helpers/proxy-fixture.ts";
import {
  type ScriptedBackend,
  startScriptedBackend,
  streamedTextCompletion,
  textCompletion,
  toolCallCompletion,
} from "./helpers/scripted-backend.ts";

const tool = (name: string, description: string, properties: string[]) => ({
  type: "function" as const,
  function: {
    name,
    description,
    parameters: {
      type: "object",
      properties: Object.fromEntries(properties.map((property) => [property, { type: "string" }])),
    },
  },
});
const manyTools = [
  weatherToolOpenAI,
  tool("send_email", "Send an email to a recipient", ["to", "subject", "body"]),
  tool("search_flights", "Find flights between two airports", ["origin", "destination"]),
  tool("convert_currency", "Convert money between currencies", ["amount", "from", "to"]),
  tool("create_calendar_event", "Add an event to the calendar", ["title", "date"]),
  tool("translate_text", "Translate text into another language", ["text", "language"]),
  tool("get_stock_price", "Latest price of a stock ticker", ["ticker"]),
  tool("play_music", "Play songs of an artist", ["artist"]),
  tool("set_alarm", "Set an alarm clock", ["time"]),
  tool("order_pizza", "Order a pizza for delivery", ["size", "toppings"]),
  tool("get_air_quality", "Air quality index of a city today", ["city"]),
  tool("Bash", "Run a shell command", ["command"]),
];

let backend: ScriptedBackend;
let proxy: RunningProxy;
let client: OpenAI;
const lines: Record<string, unknown>[] = [];

beforeAll(async () => {
  backend = await startScriptedBackend();
  proxy = await startTestProxy({
    backendUrl: backend.url,
    prosePolicy: "answer",
    thinkCalls: true,
    toolNarrowing: { maxTools: 3, alwaysOffer: ["Bash"] },
    accessLog: { format: "json", write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) },
  });
  client = openAIClientFor(proxy);
});

afterEach(() => {
  backend.assertDone();
  backend.requests.length = 0;
  lines.length = 0;
});

afterAll(async () => {
  await proxy.close();
  await backend.close();
});

/** The names of the tools the backend's `index`th chat request carried. */
function sentTools(index = 0): string[] {
  const tools = backend.chatRequests[index]?.body.tools as { function: { name: string } }[] | undefined;
  return (tools ?? []).map((entry) => entry.function.name);
}

async function logLine(): Promise<Record<string, unknown>> {
  await expect.poll(() => lines.length).toBe(1);
  return lines[0] as Record<string, unknown>;
}

describe("tool-set narrowing (--narrow-tools 3 --always-offer Bash)", () => {
  it("sends the backend the 3 best tools, Bash and respond; a call to a tool left out still passes", async () => {
    backend.push(toolCallCompletion([{ name: "order_pizza", args: { size: "large" } }]));
    const completion = await client.chat.completions.create({
      model: "m",
      messages: [
        { role: "user", content: "What is the weather and the air quality in Paris? Convert 5 USD too." },
      ],
      tools: manyTools,
    });
    expect(sentTools()).toEqual(["get_weather", "convert_currency", "get_air_quality", "Bash", "respond"]);
    const call = completion.choices[0]?.message.tool_calls?.[0];
    if (call?.type !== "function") throw new Error("expected a function call");
    expect(call.function.name).toBe("order_pizza");
    expect(JSON.parse(call.function.arguments)).toEqual({ size: "large" });
    expect(await logLine()).toMatchObject({ narrowed: "12>4", retries: 0, nudges: 0 });
  });

  it("sends every tool when there are no more than K besides the always-offered", async () => {
    backend.push(toolCallCompletion([{ name: "get_weather", args: { city: "Oslo" } }]));
    await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "Weather in Oslo?" }],
      tools: manyTools.slice(0, 3).concat(manyTools.slice(-1)),
    });
    expect(sentTools()).toEqual(["get_weather", "send_email", "search_flights", "Bash", "respond"]);
    expect(await logLine()).toMatchObject({ narrowed: null });
  });

  it("keeps a tool the client forces", async () => {
    backend.push(toolCallCompletion([{ name: "set_alarm", args: { time: "7:00" } }]));
    await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "Weather in Oslo?" }],
      tools: manyTools,
      tool_choice: { type: "function", function: { name: "set_alarm" } },
    });
    expect(sentTools()).toContain("set_alarm");
    expect(await logLine()).toMatchObject({ narrowed: "12>5" });
  });
});

const THINK_CALL =
  '<think>\nThe user wants the weather in Paris. I will call get_weather.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n';

describe("calls inside unclosed reasoning (--think-calls)", () => {
  it("answers with the call an unclosed <think> ends with, counted, without a nudge", async () => {
    backend.push(textCompletion(THINK_CALL));
    const completion = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools: [weatherToolOpenAI],
    });
    const call = completion.choices[0]?.message.tool_calls?.[0];
    if (call?.type !== "function") throw new Error("expected a function call");
    expect(call.function.name).toBe("get_weather");
    expect(JSON.parse(call.function.arguments)).toEqual({ city: "Paris" });
    expect(backend.chatRequests).toHaveLength(1);
    expect(await logLine()).toMatchObject({ think_calls: 1, rescues: 0, nudges: 0 });
  });

  it("reads it from a streamed answer too", async () => {
    backend.push(streamedTextCompletion([THINK_CALL.slice(0, 40), THINK_CALL.slice(40)]));
    const stream = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools: [weatherToolOpenAI],
      stream: true,
    });
    let name = "";
    let content = "";
    for await (const chunk of stream) {
      name += chunk.choices[0]?.delta.tool_calls?.[0]?.function?.name ?? "";
      content += chunk.choices[0]?.delta.content ?? "";
    }
    expect(name).toBe("get_weather");
    expect(content).toBe("");
    expect(await logLine()).toMatchObject({ think_calls: 1 });
  });

  it("leaves a call followed by more thought dropped: the model is nudged", async () => {
    backend.push(
      textCompletion(`${THINK_CALL}Wait, maybe Paris, Texas?`),
      textCompletion("It is sunny in Paris."),
    );
    const completion = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools: [weatherToolOpenAI],
    });
    expect(completion.choices[0]?.message.content).toBe("It is sunny in Paris.");
    expect(backend.chatRequests).toHaveLength(2);
    expect(await logLine()).toMatchObject({ think_calls: 0, nudges: 1 });
  });
});
