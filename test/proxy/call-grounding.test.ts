/**
 * Invented calls declined (ADR 041): the rule itself (`isInventedCall`) on the shapes BFCL's
 * irrelevance cases show, and the proxy's guarded path against a scripted OpenAI-compatible server
 * on 127.0.0.1 (the proxy's own HTTP backend): a rescued first answer whose every argument value
 * is missing from the conversation is declined and the request answered without tools; a call
 * with one value the user gave is taken; off by default; forced tool choices are left alone.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createMessage, type Message } from "../../src/core/messages.ts";
import { toolSpecFromJsonSchema } from "../../src/core/tools.ts";
import { groundingEvidence, isInventedCall } from "../../src/guardrails/grounding.ts";
import { createHttpBackend, createProxy, type ProxyOptions } from "../../src/proxy/index.ts";
import {
  type BackendReply,
  type ScriptedBackend,
  startScriptedBackend,
  textCompletion,
} from "./helpers/scripted-backend.ts";

const weatherSchema = {
  type: "object",
  properties: {
    location: { type: "string", description: "The city and state, e.g. San Francisco, CA" },
    unit: { type: "string", enum: ["celsius", "fahrenheit"], default: "fahrenheit" },
  },
  required: ["location"],
};
const weather = toolSpecFromJsonSchema(
  "get_current_weather",
  "Get the current weather in a location.",
  weatherSchema,
);

function said(...texts: string[]): Message[] {
  return texts.map((text) => createMessage("user", text, { type: "user_input" }));
}

function invented(args: Record<string, unknown>, ...texts: string[]): boolean {
  return isInventedCall({ tool: "get_current_weather", args }, weather, groundingEvidence(said(...texts)));
}

describe("isInventedCall", () => {
  it("calls a call invented when none of its values appears in the conversation", () => {
    expect(
      invented({ location: "San Francisco, CA", unit: "celsius" }, "Do you have any red shoes in size 8?"),
    ).toBe(true);
  });

  it("calls a call grounded when one value appears", () => {
    expect(invented({ location: "Paris, France", unit: "celsius" }, "What is the weather in Paris?")).toBe(
      false,
    );
  });

  it("skips enum members, defaults and booleans: a call with nothing else to check is not invented", () => {
    expect(invented({ unit: "celsius" }, "Is it cold?")).toBe(false);
    expect(invented({ unit: "fahrenheit", metric: true }, "Is it cold?")).toBe(false);
    expect(invented({}, "Is it cold?")).toBe(false);
  });

  it("reads numbers as people write them", () => {
    expect(invented({ location: 12000 }, "a car that travels 12,000 miles per year")).toBe(false);
    expect(invented({ location: 0.25 }, "after a 25% discount")).toBe(false);
    expect(invented({ location: 440 }, "two notes of 440Hz and 880Hz")).toBe(false);
    expect(invented({ location: -122.0842499 }, "longitude -122.0842499")).toBe(false);
    expect(invented({ location: 15 }, "two notes of 440Hz and 880Hz")).toBe(true);
  });

  it("finds a distinctive word inside a longer value, and words of unspaced scripts anywhere", () => {
    expect(
      invented({ location: "https://example.com/geo?lat=37.4224764" }, "the address at latitude 37.4224764"),
    ).toBe(false);
    expect(invented({ location: "https://api.example.org/v2/news" }, "Find me a restaurant")).toBe(true);
    expect(invented({ location: "北京" }, "今天查看北京的新闻")).toBe(false);
  });

  it("takes values from tool results and the system prompt, not from the assistant's own words", () => {
    const messages = [
      createMessage("system", "The user lives in Lyon.", { type: "system_prompt" }),
      createMessage("assistant", "Let me check Oslo.", { type: "text_response" }),
      createMessage("tool", "Home city: Turin", { type: "tool_result" }),
    ];
    const evidence = groundingEvidence(messages);
    const call = (location: string) => ({ tool: "get_current_weather", args: { location } });
    expect(isInventedCall(call("Lyon"), weather, evidence)).toBe(false);
    expect(isInventedCall(call("Turin"), weather, evidence)).toBe(false);
    expect(isInventedCall(call("Oslo"), weather, evidence)).toBe(true);
  });

  const price = toolSpecFromJsonSchema("calculateFinalPrice", "The price after a discount and tax.", {
    type: "object",
    properties: {
      price: { type: "number", description: "The original price." },
      discount_rate: { type: "number", description: "The discount, in percent." },
      service_id: { type: "integer", description: "1 for standard, 2 for express." },
      note: { type: "string", description: "A note, e.g. Gift wrap" },
    },
    required: ["price", "discount_rate"],
  });
  const priced = (args: Record<string, unknown>, text: string) =>
    isInventedCall({ tool: "calculateFinalPrice", args }, price, groundingEvidence(said(text)));

  it("calls a call invented when a required argument was made up, though another value was given", () => {
    const question = "What is the final price of a product after a 25% discount?";
    expect(priced({ price: 100, discount_rate: 25 }, question)).toBe(true);
    expect(priced({ price: 80, discount_rate: 25 }, "A product at 80 dollars with a 25% discount")).toBe(
      false,
    );
    // An optional argument made up beside a given required one is not enough.
    expect(priced({ price: 80, discount_rate: 25, note: "Birthday" }, "80 dollars, 25% off")).toBe(false);
  });

  it("reads number words and a month beside a day as the digits a model writes", () => {
    const tool = (args: Record<string, unknown>, text: string) =>
      isInventedCall({ tool: "calculateFinalPrice", args }, price, groundingEvidence(said(text)));
    expect(tool({ price: 2, discount_rate: 10 }, "two nights at 10 percent off")).toBe(false);
    expect(tool({ price: "2023-04-01", discount_rate: 10 }, "from April 1st, 10 off")).toBe(false);
    expect(tool({ price: "10/12/2022", discount_rate: 10 }, "from 10th December 2022, 10 off")).toBe(false);
    // A second date nobody gave is still made up; "may" alone is not a month.
    expect(tool({ price: "2023-04-07", discount_rate: 10 }, "from April 1st, 10 off")).toBe(true);
    expect(tool({ price: 5, discount_rate: 10 }, "May I have 10 off?")).toBe(true);
  });

  it("takes a number the argument's description lists as chosen from the schema, not a text example", () => {
    expect(priced({ price: 80, discount_rate: 25, service_id: 2 }, "80 dollars, 25% off, ironing")).toBe(
      false,
    );
    expect(priced({ price: 80, discount_rate: 25 }, "80 dollars, 25% off")).toBe(false);
    const service = toolSpecFromJsonSchema("get_service_id", "Find a service.", {
      type: "object",
      properties: {
        service_id: {
          type: "integer",
          description:
            "For example, '1' represents a cleaning service, '2' an ironing service, and '3' a full one.",
        },
      },
      required: ["service_id"],
    });
    for (const id of [2, 3]) {
      expect(
        isInventedCall(
          { tool: "get_service_id", args: { service_id: id } },
          service,
          groundingEvidence(said("Ironing")),
        ),
      ).toBe(false);
    }
    // A bound is not a code: any value may sit inside it (BFCL irrelevance_150).
    const rgb = toolSpecFromJsonSchema("RGB_to_Pantone", "Convert a colour.", {
      type: "object",
      properties: Object.fromEntries(
        ["red", "green", "blue"].map((name) => [
          name,
          { type: "integer", description: `The ${name} component, ranging from 0 to 255.` },
        ]),
      ),
      required: ["red", "green", "blue"],
    });
    expect(
      isInventedCall(
        { tool: "RGB_to_Pantone", args: { red: 255, green: 0, blue: 0 } },
        rgb,
        groundingEvidence(said("Which colors should I mix to get a specific shade?")),
      ),
    ).toBe(true);
    const noted = toolSpecFromJsonSchema("note", "Leave a note.", {
      type: "object",
      properties: { note: { type: "string", description: "A note, e.g. Gift wrap" } },
      required: ["note"],
    });
    expect(
      isInventedCall({ tool: "note", args: { note: "Gift wrap" } }, noted, groundingEvidence(said("Hi"))),
    ).toBe(true);
  });
});

const tools = [
  {
    type: "function",
    function: {
      name: "get_current_weather",
      description: "Get the current weather.",
      parameters: weatherSchema,
    },
  },
];

const fenced = (args: Record<string, unknown>) =>
  `\`\`\`json\n${JSON.stringify({ name: "get_current_weather", arguments: args })}\n\`\`\``;

let backend: ScriptedBackend | undefined;
afterEach(async () => {
  await backend?.close();
  backend = undefined;
});

async function ask(
  question: string,
  steps: BackendReply[],
  options: Partial<ProxyOptions> = { groundedCalls: true },
  body: Record<string, unknown> = {},
) {
  backend = await startScriptedBackend();
  backend.push(...steps);
  const lines: Record<string, unknown>[] = [];
  const proxy = createProxy({
    backend: createHttpBackend({ url: backend.url }),
    accessLog: { format: "json", write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) },
    ...options,
  });
  const response = await proxy.request("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m", messages: [{ role: "user", content: question }], tools, ...body }),
  });
  expect(response.status).toBe(200);
  const answer = (await response.json()) as {
    choices: {
      message: { content: string | null; tool_calls?: { function: { name: string; arguments: string } }[] };
    }[];
  };
  backend.assertDone();
  return { choice: answer.choices[0], log: lines.at(-1) ?? {}, requests: backend.chatRequests };
}

describe("grounded calls through the proxy", () => {
  const SHOES = "Do you have any red shoes in size 8?";

  it("declines an invented call and answers the request without tools", async () => {
    const { choice, log, requests } = await ask(SHOES, [
      textCompletion(fenced({ location: "San Francisco, CA", unit: "celsius" })),
      textCompletion("I can only tell the weather; I cannot look up shoes."),
    ]);
    expect(choice?.message.content).toBe("I can only tell the weather; I cannot look up shoes.");
    expect(choice?.message.tool_calls ?? []).toEqual([]);
    expect(requests).toHaveLength(2);
    expect(requests[1]?.body.tools).toBeUndefined();
    expect(log).toMatchObject({ declined: 1, ungrounded: 1, rescues: 0 });
  });

  it("takes a call with a value the user gave", async () => {
    const { choice, log, requests } = await ask("What is the weather in Paris?", [
      textCompletion(fenced({ location: "Paris, France", unit: "celsius" })),
    ]);
    expect(choice?.message.tool_calls?.[0]?.function.name).toBe("get_current_weather");
    expect(requests).toHaveLength(1);
    expect(log).toMatchObject({ declined: 0, ungrounded: 0, rescues: 1 });
  });

  it("is off by default", async () => {
    const { choice, log } = await ask(SHOES, [textCompletion(fenced({ location: "San Francisco, CA" }))], {});
    expect(choice?.message.tool_calls?.[0]?.function.name).toBe("get_current_weather");
    expect(log).toMatchObject({ declined: 0, ungrounded: 0 });
  });

  it("leaves a forced tool choice alone: the client asked for a call", async () => {
    const { choice, log } = await ask(
      SHOES,
      [textCompletion(fenced({ location: "San Francisco, CA" }))],
      { groundedCalls: true },
      { tool_choice: "required" },
    );
    expect(choice?.message.tool_calls?.[0]?.function.name).toBe("get_current_weather");
    expect(log).toMatchObject({ declined: 0, ungrounded: 0 });
  });
});
