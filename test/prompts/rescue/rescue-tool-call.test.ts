import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool, toolSpecFromJsonSchema } from "../../../src/core/tools.ts";
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
    ["Llama 3.2 pythonic list", '[get_weather(city="Paris")]'],
    ["a pythonic call alone", 'get_weather(city="Paris")'],
    ["a pythonic call in a ```python fence", 'Sure:\n```python\nget_weather(city="Paris")\n```'],
    [
      "LFM2 <|tool_call_start|>",
      '<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>Checking the weather in Paris.',
    ],
    [
      "FunctionGemma <start_function_call>",
      "<start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call>",
    ],
    ["FunctionGemma without its tokens", "call:get_weather{city:Paris}"],
    ["Gemma 3 ```tool_code", '```tool_code\nprint(get_weather(city="Paris"))\n```'],
    [
      "gpt-oss harmony whose analysis mentions a recipient",
      '<|channel|>analysis<|message|>I will send it to=functions.get_weather next.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>',
    ],
    [
      "gpt-oss harmony",
      '<|channel|>analysis<|message|>User wants weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>',
    ],
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

  it("tries the new formats in ADR 010's order", () => {
    // A special-token marker beats a fence; a tool_code fence beats a JSON fence; a JSON fence
    // beats a pythonic line; a pythonic line beats bare JSON.
    const lfm2 = '<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>';
    const toolCode = '```tool_code\nget_time(zone="CET")\n```';
    const jsonFence = '```json\n{"tool": "search", "args": {"query": "x"}}\n```';
    const pythonic = 'get_time(zone="UTC")';
    const bare = '{"tool": "search", "args": {"query": "bare"}}';
    expect(rescueToolCall([bare, pythonic, jsonFence, toolCode, lfm2].join("\n"), TOOLS)).toEqual(paris);
    expect(rescueToolCall([bare, pythonic, jsonFence, toolCode].join("\n"), TOOLS)).toEqual([
      { tool: "get_time", args: { zone: "CET" } },
    ]);
    expect(rescueToolCall([bare, pythonic, jsonFence].join("\n"), TOOLS)).toEqual([
      { tool: "search", args: { query: "x" } },
    ]);
    expect(rescueToolCall([bare, pythonic].join("\n"), TOOLS)).toEqual([
      { tool: "get_time", args: { zone: "UTC" } },
    ]);
  });

  it("does not fall back to another format when the first one present is garbled", () => {
    // The bare-JSON reader alone would find the first, complete call.
    const text =
      '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call><tool_call>{"name": "get_time", "arguments": {</tool_call>';
    expect(rescueToolCall(text, TOOLS)).toBeNull();
  });
});

describe("rescueToolCall: Mistral's [TOOL_CALLS]name{json}", () => {
  const CODING = ["read", "edit"];

  it.each([
    ["no separator", '[TOOL_CALLS]read{"file_path": "x.py"}'],
    ["a space", '[TOOL_CALLS]read {"file_path": "x.py"}'],
    ["a newline", '[TOOL_CALLS]read\n{"file_path": "x.py"}'],
    [
      "an apology and a think block before it",
      'I apologize.\n<think>read first</think>\n[TOOL_CALLS]read{"file_path": "x.py"}',
    ],
    ["a [THINK] block before it", '[THINK]I should read x.py[/THINK][TOOL_CALLS]read{"file_path": "x.py"}'],
  ])("rescues it with %s", (_label, text) => {
    expect(rescueToolCall(text, CODING)).toEqual([{ tool: "read", args: { file_path: "x.py" } }]);
  });

  it("rescues several calls in order", () => {
    const text =
      '[TOOL_CALLS]read{"file_path": "a.py"}\n[TOOL_CALLS]edit{"file_path": "a.py", "old_string": "say \\"hi\\"", "new_string": "{ }"}';
    expect(rescueToolCall(text, CODING)).toEqual([
      { tool: "read", args: { file_path: "a.py" } },
      { tool: "edit", args: { file_path: "a.py", old_string: 'say "hi"', new_string: "{ }" } },
    ]);
  });

  it("keeps the older [TOOL_CALLS][{name, arguments}] array form", () => {
    const text =
      '[TOOL_CALLS][{"name": "read", "arguments": {"file_path": "a.py"}}, {"name": "edit", "arguments": {}}]';
    expect(rescueToolCall(text, CODING)).toEqual([
      { tool: "read", args: { file_path: "a.py" } },
      { tool: "edit", args: {} },
    ]);
  });

  it.each([
    ["an unknown tool", '[TOOL_CALLS]unknown{"x": 1}'],
    ["JSON that never closes", '[TOOL_CALLS]read{"file_path": "never closed"'],
    ["a call only considered in [THINK]", '[THINK][TOOL_CALLS]read{"file_path": "x.py"}[/THINK]Which file?'],
  ])("does not rescue %s", (_label, text) => {
    expect(rescueToolCall(text, CODING)).toBeNull();
  });
});

describe("rescueToolCall: Qwen-Coder values and the tools' schemas", () => {
  const search = toolSpecFromJsonSchema("search", "Search", {
    type: "object",
    properties: {
      zip: { type: "string" },
      limit: { type: "integer" },
      ratio: { type: "number" },
      exact: { type: "boolean" },
      filters: { type: "object" },
      tags: { type: "array", items: { type: "string" } },
    },
  });
  const text = [
    "<tool_call>",
    "<function=search>",
    "<parameter=zip>\n02134\n</parameter>",
    "<parameter=limit>\n10\n</parameter>",
    "<parameter=ratio>0.5</parameter>",
    "<parameter=exact>true</parameter>",
    '<parameter=filters>{"lang": "en"}</parameter>',
    '<parameter=tags>["a", "b"]</parameter>',
    "</function>",
    "</tool_call>",
  ].join("\n");

  it("keeps every value a string when no schema is given", () => {
    expect(rescueToolCall(text, ["search"])).toEqual([
      {
        tool: "search",
        args: {
          zip: "02134",
          limit: "10",
          ratio: "0.5",
          exact: "true",
          filters: '{"lang": "en"}',
          tags: '["a", "b"]',
        },
      },
    ]);
  });

  it("converts each value by the tool's JSON Schema when the specs are given", () => {
    expect(rescueToolCall(text, ["search"], { tools: [search] })).toEqual([
      {
        tool: "search",
        args: { zip: "02134", limit: 10, ratio: 0.5, exact: true, filters: { lang: "en" }, tags: ["a", "b"] },
      },
    ]);
  });

  it("converts by a zod-defined tool's schema too", () => {
    const spec = defineTool({
      name: "search",
      description: "Search",
      parameters: z.object({ zip: z.string(), limit: z.number().int().optional() }),
      execute: () => "",
    }).spec;
    expect(
      rescueToolCall(
        "<function=search><parameter=zip>02134</parameter><parameter=limit>7</parameter></function>",
        ["search"],
        { tools: [spec] },
      ),
    ).toEqual([{ tool: "search", args: { zip: "02134", limit: 7 } }]);
  });

  it("converts only the text-valued calls of a mixed <tool_call> batch", () => {
    const mixed =
      '<tool_call>{"name": "search", "arguments": {"limit": "10"}}</tool_call><tool_call><function=search><parameter=limit>10</parameter></function></tool_call>';
    expect(rescueToolCall(mixed, ["search"], { tools: [search] })).toEqual([
      { tool: "search", args: { limit: "10" } },
      { tool: "search", args: { limit: 10 } },
    ]);
  });

  it("leaves JSON formats' values as the model typed them, schema or not", () => {
    expect(
      rescueToolCall('{"tool": "search", "args": {"limit": "10"}}', ["search"], { tools: [search] }),
    ).toEqual([{ tool: "search", args: { limit: "10" } }]);
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
    ["a python-style call quoted in prose", 'I would run get_weather(city="Paris") next.'],
    ["a python-style call of an unknown tool", '[get_stock_price(symbol="ACME")]'],
    ["a pythonic call list naming an unknown tool", '[get_weather(city="Paris"), book_flight(to="CDG")]'],
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
    "```tool_code\n",
    "```",
    "<|tool_call_start|>",
    "<|tool_call_end|>",
    "<start_function_call>call:",
    "<escape>",
    "<|channel|>commentary to=functions.",
    "<|message|>",
    "\nget_weather(",
    "[get_time(",
    "call:search{",
    "city=",
    "'",
    ")",
    "True",
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
          `[TOOL_CALLS]${tool}${json}`,
          `[TOOL_CALLS]${tool}\n${json}`,
          `<|python_tag|>${JSON.stringify({ name: tool, parameters: args })}<|eom_id|>`,
          `Here you go:\n\`\`\`json\n${JSON.stringify({ name: tool, arguments: json })}\n\`\`\``,
          `<|tool_call_start|>[${JSON.stringify({ name: tool, arguments: args })}]<|tool_call_end|>`,
          `<|channel|>commentary to=functions.${tool} <|constrain|>json<|message|>${json}<|call|>`,
        ];
        for (const text of texts) expect(rescueToolCall(text, TOOLS)).toEqual([{ tool, args }]);
      }),
      { numRuns: 300 },
    );
  });

  it("round-trips any call written as pythonic keyword arguments", () => {
    const identifier = fc.stringMatching(/^[a-z_][a-z0-9_]{0,7}$/);
    const kwargs = fc.dictionary(identifier, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
    fc.assert(
      fc.property(fc.constantFrom(...TOOLS), kwargs, (tool, rawArgs) => {
        const args = JSON.parse(JSON.stringify(rawArgs)) as Record<string, unknown>;
        const call = `${tool}(${Object.entries(args)
          .map(([key, value]) => `${key}=${pythonLiteral(value)}`)
          .join(", ")})`;
        const texts = [
          `[${call}]`,
          call,
          `<|tool_call_start|>[${call}]<|tool_call_end|>`,
          `\`\`\`tool_code\nprint(${call})\n\`\`\``,
        ];
        for (const text of texts) expect(rescueToolCall(text, TOOLS)).toEqual([{ tool, args }]);
      }),
      { numRuns: 300 },
    );
  });
});

/** A JSON value written as a Python literal (JSON's string escapes are Python's too). */
function pythonLiteral(value: unknown): string {
  if (value === null) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (Array.isArray(value)) return `[${value.map(pythonLiteral).join(", ")}]`;
  if (typeof value === "object") {
    return `{${Object.entries(value)
      .map(([key, item]) => `${JSON.stringify(key)}: ${pythonLiteral(item)}`)
      .join(", ")}}`;
  }
  return JSON.stringify(value);
}

/**
 * ADR 007: an unclosed Qwen/Hermes `<tool_call>` stays rescued when what it holds is a whole call
 * (the model or the server stopped right after it: `</tool_call>` as a stop string, the end-of-turn
 * token, `max_tokens`), as vLLM's and SGLang's Hermes parsers read it (`<tool_call>(.*)` to the end).
 * A call the model did not finish, or one followed by more prose, is not.
 */
describe("rescueToolCall: an unclosed Qwen <tool_call> (ADR 007)", () => {
  it.each([
    ["at the end of the output", '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}'],
    ["with trailing whitespace", '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n\n'],
    ["after prose", 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}'],
    [
      "holding Qwen3-Coder XML",
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>",
    ],
  ])("is rescued %s", (_label, text) => {
    expect(rescueToolCall(text, TOOLS)).toEqual(paris);
  });

  it("is rescued before the next block, which keeps its own call", () => {
    const text =
      '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>';
    expect(rescueToolCall(text, TOOLS)).toEqual([...paris, { tool: "get_time", args: {} }]);
  });

  it.each([
    ["a call cut off mid-JSON", '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par'],
    ["a call cut off before its arguments", '<tool_call>\n{"name": "get_weather", '],
    [
      "prose after the call",
      '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\nThen I will answer.',
    ],
    ["an unknown tool", '<tool_call>\n{"name": "get_wether", "arguments": {"city": "Paris"}}'],
    ["an empty block", "<tool_call>\n"],
  ])("is not rescued with %s", (_label, text) => {
    expect(rescueToolCall(text, TOOLS)).toBeNull();
  });
});
