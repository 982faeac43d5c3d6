import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { detectToolCalls, rescueToolCall } from "../../../src/prompts/rescue/index.ts";

const TOOLS = ["get_weather", "get_time", "search"];
const paris = [{ tool: "get_weather", args: { city: "Paris" } }];

describe("rescueToolCall: realistic model outputs", () => {
  it.each([
    [
      "Qwen2.5 <tool_call>",
      '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    ],
    [
      "Mistral 7B v0.3 [TOOL_CALLS]",
      '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}]',
    ],
    ["Mistral v11 [TOOL_CALLS]name[ARGS]", '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'],
    [
      "Llama 3.1 <|python_tag|>",
      '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>',
    ],
    [
      "Qwen3-Coder XML",
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
    ],
    ["the rehearsal form", 'get_weather[ARGS]{"city": "Paris"}'],
    [
      "a small model's prose and fenced JSON",
      'Sure! Here is the tool call:\n\n```json\n{"tool": "get_weather", "args": {"city": "Paris"}}\n```\n\nLet me know!',
    ],
    [
      "a model thinking out loud, then calling",
      'Okay, the user asks about Paris. I need the weather there, so get_weather is the right tool.\n\n{"name": "get_weather", "arguments": {"city": "Paris"}}',
    ],
    ["bare JSON in prose", 'Sure! {"tool": "get_weather", "args": {"city": "Paris"}} Let me know.'],
    [
      "Qwen3 with a think block mentioning another tool",
      '<think>\nShould I call search? No, {"tool": "search", "args": {}} is wrong here.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    ],
  ])("rescues %s", (_label, text) => {
    expect(rescueToolCall(text, TOOLS)).toEqual(paris);
  });

  it("returns every call of a batch, in order", () => {
    const text =
      '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {"timezone": "Europe/Paris"}}\n</tool_call>';
    expect(rescueToolCall(text, TOOLS)).toEqual([
      ...paris,
      { tool: "get_time", args: { timezone: "Europe/Paris" } },
    ]);
  });

  it("lets the first format present decide: markers before fences before bare JSON", () => {
    const text =
      '{"tool": "search", "args": {"query": "x"}}\n```json\n{"tool": "get_time", "args": {}}\n```\n<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>';
    expect(rescueToolCall(text, TOOLS)).toEqual(paris);
    expect(
      detectToolCalls('{"tool": "search", "args": {}}\n```json\n{"tool": "get_time", "args": {}}\n```'),
    ).toEqual({
      status: "found",
      calls: [{ tool: "get_time", args: {} }],
    });
  });

  it("does not fall back to another format when the first one present is garbled", () => {
    // The bare-JSON reader alone would find the first, complete call.
    const text =
      '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call><tool_call>{"name": "get_time", "arguments": {</tool_call>';
    expect(rescueToolCall(text, TOOLS)).toBeNull();
  });
});

describe("rescueToolCall: outputs that must not be rescued", () => {
  it.each([
    ["truncated JSON", '{"tool": "get_weather", "args": {"city": "Par'],
    ["an unknown tool", '{"tool": "get_stock_price", "args": {"symbol": "ACME"}}'],
    ["args that are an array", '{"tool": "get_weather", "args": ["Paris"]}'],
    ["prose that mentions a tool", "You could use get_weather to look up the weather in Paris."],
    ["a plain object without tool or name", '{"city": "Paris", "unit": "celsius"}'],
    ["a python dict with single quotes", "{'name': 'get_weather', 'arguments': {'city': 'Paris'}}"],
    ["a python-style call", 'get_weather(city="Paris")'],
    ["an empty string", ""],
    [
      "a call only considered in thinking",
      '<think>{"tool": "get_weather", "args": {"city": "Paris"}}</think>I am not sure.',
    ],
  ])("does not rescue %s", (_label, text) => {
    expect(rescueToolCall(text, TOOLS)).toBeNull();
  });

  it("rejects the whole batch when one call names an unknown tool", () => {
    const text =
      '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "book_flight", "arguments": {}}]';
    expect(rescueToolCall(text, TOOLS)).toBeNull();
    expect(rescueToolCall(text, [...TOOLS, "book_flight"])).toHaveLength(2);
  });

  it("rescues nothing when no tools are available", () => {
    expect(rescueToolCall('{"tool": "get_weather", "args": {}}', [])).toBeNull();
  });
});

describe("rescueToolCall: properties", () => {
  const isPlainObject = (value: unknown) =>
    typeof value === "object" && value !== null && !Array.isArray(value);

  const fragments = fc.constantFrom(
    "<tool_call>",
    "</tool_call>",
    "[TOOL_CALLS]",
    "[ARGS]",
    "<|python_tag|>",
    "<|eom_id|>",
    "<function=get_weather>",
    "<parameter=city>",
    "</parameter>",
    "</function>",
    "```json\n",
    "```",
    "<think>",
    "</think>",
    '{"tool": "get_weather", "args": ',
    '{"name": "search", "arguments": ',
    '{"city": "Paris"}',
    '"{\\"a\\": 1}"',
    "get_time",
    "unknown_tool",
    "{",
    "}",
    "[",
    "]",
    '"',
    "\\",
    ",",
    ";",
    "null",
    "[1]",
  );
  const modelish = fc
    .array(fc.oneof(fragments, fc.string({ maxLength: 6 })), { maxLength: 30 })
    .map((parts) => parts.join(""));

  it("never throws, and returns only known tools with object args", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: "grapheme" }), modelish), (text) => {
        const calls = rescueToolCall(text, TOOLS);
        if (calls === null) return;
        expect(calls.length).toBeGreaterThan(0);
        for (const call of calls) {
          expect(TOOLS).toContain(call.tool);
          expect(isPlainObject(call.args)).toBe(true);
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it("round-trips any call serialized in the documented formats", () => {
    const jsonObject = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), {
      maxKeys: 4,
    });
    fc.assert(
      fc.property(fc.constantFrom(...TOOLS), jsonObject, (tool, rawArgs) => {
        // JSON.parse(JSON.stringify()) normalizes -0 and the like, as the model's text would.
        const args = JSON.parse(JSON.stringify(rawArgs)) as Record<string, unknown>;
        const json = JSON.stringify(args);
        const texts = [
          JSON.stringify({ tool, args }),
          `<tool_call>\n${JSON.stringify({ name: tool, arguments: args })}\n</tool_call>`,
          `[TOOL_CALLS] ${JSON.stringify([{ name: tool, arguments: args }])}`,
          `[TOOL_CALLS]${tool}[ARGS]${json}`,
          `<|python_tag|>${JSON.stringify({ name: tool, parameters: args })}<|eom_id|>`,
          `Here you go:\n\`\`\`json\n${JSON.stringify({ name: tool, arguments: json })}\n\`\`\``,
        ];
        for (const text of texts) expect(rescueToolCall(text, TOOLS)).toEqual([{ tool, args }]);
      }),
      { numRuns: 300 },
    );
  });
});
