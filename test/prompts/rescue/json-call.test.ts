import { describe, expect, it } from "vitest";
import { looksLikeCall, parseJsonCalls } from "../../../src/prompts/rescue/json-call.ts";

const paris = { tool: "get_weather", args: { city: "Paris" } };

describe("parseJsonCalls", () => {
  it("reads a bare call", () => {
    expect(parseJsonCalls('{"tool": "get_weather", "args": {"city": "Paris"}}\n')).toEqual({
      status: "found",
      calls: [paris],
    });
  });

  it("reads a call embedded in prose, with braces in its strings", () => {
    const text =
      'Sure! I will look that up. {"name": "search", "arguments": {"query": "json {x} [y]"}} Let me know if you need more.';
    expect(parseJsonCalls(text)).toEqual({
      status: "found",
      calls: [{ tool: "search", args: { query: "json {x} [y]" } }],
    });
  });

  it("reads a model thinking out loud and then calling (Llama 3.2 style, parameters key)", () => {
    const text = [
      "The user wants the weather in Paris. I have a get_weather tool that takes a city.",
      "I should call it with city set to Paris.",
      "",
      '{"name": "get_weather", "parameters": {"city": "Paris"}}',
    ].join("\n");
    expect(parseJsonCalls(text)).toEqual({ status: "found", calls: [paris] });
  });

  it("reads an array of calls and several objects in a row", () => {
    const array = '[{"tool": "get_weather", "args": {"city": "Paris"}}, {"tool": "get_time", "args": {}}]';
    const lines = '{"tool": "get_weather", "args": {"city": "Paris"}}\n{"tool": "get_time", "args": {}}';
    const expected = { status: "found", calls: [paris, { tool: "get_time", args: {} }] };
    expect(parseJsonCalls(array)).toEqual(expected);
    expect(parseJsonCalls(lines)).toEqual(expected);
  });

  it("reads OpenAI-style string arguments", () => {
    const text = '{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}';
    expect(parseJsonCalls(text)).toEqual({ status: "found", calls: [paris] });
  });

  it("skips JSON that is not a call and prose braces", () => {
    const text =
      'The result {was} {"temperature": 22} and then {"tool": "get_weather", "args": {"city": "Paris"}}';
    expect(parseJsonCalls(text)).toEqual({ status: "found", calls: [paris] });
  });

  it("finds nothing in prose that merely mentions a tool", () => {
    expect(parseJsonCalls("I would use the get_weather tool with the city Paris.")).toEqual({
      status: "absent",
    });
  });

  it("finds nothing in a plain object without tool or name keys", () => {
    expect(parseJsonCalls('{"city": "Paris", "unit": "celsius"}')).toEqual({ status: "absent" });
  });

  it.each([
    ["truncated JSON", '{"tool": "get_weather", "args": {"city": "Par'],
    ["args that are an array", '{"tool": "get_weather", "args": ["Paris"]}'],
    ["a python dict with single quotes", "{'name': 'get_weather', 'arguments': {'city': 'Paris'}}"],
    ["a trailing comma", '{"tool": "get_weather", "args": {"city": "Paris"},}'],
  ])("is garbled by %s", (_label, text) => {
    expect(parseJsonCalls(text).status).toBe("garbled");
  });

  it("is garbled when a valid call is followed by a truncated one", () => {
    const text =
      '{"tool": "get_weather", "args": {"city": "Paris"}}\n{"tool": "get_weather", "args": {"city": "Ly';
    expect(parseJsonCalls(text).status).toBe("garbled");
  });

  it("is not garbled by an unclosed brace in prose before the call", () => {
    const text = 'Hmm :-{ ok: {"tool": "get_weather", "args": {"city": "Paris"}}';
    expect(parseJsonCalls(text)).toEqual({ status: "found", calls: [paris] });
  });
});

describe("looksLikeCall", () => {
  it.each(['{"tool": "x"', '{ "name" :', '[{"name": "x"', "{'name': 'x'", '{"function": {'])(
    "is true for %s",
    (text) => {
      expect(looksLikeCall(text)).toBe(true);
    },
  );

  it.each(["{if you need anything}", '{"city": "Paris", "name": "x"', "[1, 2"])("is false for %s", (text) => {
    expect(looksLikeCall(text)).toBe(false);
  });
});
