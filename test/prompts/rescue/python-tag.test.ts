import { describe, expect, it } from "vitest";
import { parsePythonTag } from "../../../src/prompts/rescue/python-tag.ts";

const paris = { tool: "get_weather", args: { city: "Paris" } };

describe("parsePythonTag", () => {
  it("reads Llama 3.1's output with the end-of-message token", () => {
    const text = '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>';
    expect(parsePythonTag(text)).toEqual({ status: "found", calls: [paris] });
  });

  it("reads several calls separated by semicolons", () => {
    const text =
      '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": "get_time", "parameters": {}}';
    expect(parsePythonTag(text)).toEqual({ status: "found", calls: [paris, { tool: "get_time", args: {} }] });
  });

  it("reads a call without an end token", () => {
    expect(
      parsePythonTag('<|python_tag|> {"name": "get_weather", "parameters": {"city": "Paris"}}\n'),
    ).toEqual({
      status: "found",
      calls: [paris],
    });
  });

  it.each([
    ["a built-in tool's Python call", '<|python_tag|>brave_search.call(query="weather in Paris")<|eom_id|>'],
    ["truncated JSON", '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Pa'],
    [
      "calls without a separator",
      '<|python_tag|>{"name": "a", "parameters": {}} {"name": "b", "parameters": {}}',
    ],
    ["JSON that is not a call", '<|python_tag|>{"city": "Paris"}<|eom_id|>'],
    ["nothing after the tag", "<|python_tag|><|eom_id|>"],
  ])("is garbled by %s", (_label, text) => {
    expect(parsePythonTag(text).status).toBe("garbled");
  });

  it("is absent without the tag", () => {
    expect(parsePythonTag('{"name": "get_weather", "parameters": {}}')).toEqual({ status: "absent" });
  });
});
