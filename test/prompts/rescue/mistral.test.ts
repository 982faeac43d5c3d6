import { describe, expect, it } from "vitest";
import { parseMistral } from "../../../src/prompts/rescue/mistral.ts";

const paris = { tool: "get_weather", args: { city: "Paris" } };

describe("parseMistral", () => {
  it("reads Mistral 7B v0.3's array form", () => {
    const text = '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}]';
    expect(parseMistral(text)).toEqual({ status: "found", calls: [paris] });
  });

  it("reads several calls with ids and ignores the end-of-sequence token", () => {
    const text =
      '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1B2c3D4e"}, {"name": "get_time", "arguments": {}, "id": "f5G6h7I8j"}]</s>';
    expect(parseMistral(text)).toEqual({ status: "found", calls: [paris, { tool: "get_time", args: {} }] });
  });

  it("reads the v11 name[ARGS] form, one marker per call", () => {
    const text = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{}';
    expect(parseMistral(text)).toEqual({ status: "found", calls: [paris, { tool: "get_time", args: {} }] });
  });

  it("reads a single object after the marker", () => {
    expect(parseMistral('[TOOL_CALLS] {"name": "get_weather", "arguments": {"city": "Paris"}}')).toEqual({
      status: "found",
      calls: [paris],
    });
  });

  it.each([
    ["truncated JSON", '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Par'],
    ["a marker followed by prose", "[TOOL_CALLS] I cannot do that."],
    ["a marker followed by nothing", "[TOOL_CALLS]"],
    ["array arguments", '[TOOL_CALLS] [{"name": "get_weather", "arguments": ["Paris"]}]'],
    ["truncated v11 args", '[TOOL_CALLS]get_weather[ARGS]{"city": '],
  ])("is garbled by %s", (_label, text) => {
    expect(parseMistral(text).status).toBe("garbled");
  });

  it("is absent without the marker", () => {
    expect(parseMistral('[{"name": "get_weather", "arguments": {}}]')).toEqual({ status: "absent" });
  });
});
