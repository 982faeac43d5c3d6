import { describe, expect, it } from "vitest";
import { parseLfm2 } from "../../../src/prompts/rescue/lfm2.ts";

const paris = { tool: "get_weather", args: { city: "Paris" } };

describe("parseLfm2", () => {
  it("reads LFM2's pythonic list and ignores the sentence after it", () => {
    const text =
      '<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>Checking the weather in Paris.';
    expect(parseLfm2(text)).toEqual({ status: "found", calls: [paris] });
  });

  it("reads several calls, and several blocks", () => {
    const text =
      '<|tool_call_start|>[get_weather(city="Paris"), get_time(zone="CET")]<|tool_call_end|>\n<|tool_call_start|>[get_time()]<|tool_call_end|>';
    expect(parseLfm2(text)).toEqual({
      status: "found",
      calls: [paris, { tool: "get_time", args: { zone: "CET" } }, { tool: "get_time", args: {} }],
    });
  });

  it("reads the JSON form llama.cpp asks for", () => {
    const text =
      '<|tool_call_start|>[{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1"}]<|tool_call_end|>';
    expect(parseLfm2(text)).toEqual({ status: "found", calls: [paris] });
  });

  it("reads a block cut off before its end token", () => {
    expect(parseLfm2('<|tool_call_start|>[get_weather(city="Paris")]')).toEqual({
      status: "found",
      calls: [paris],
    });
  });

  it.each([
    ["a positional argument", '<|tool_call_start|>[get_weather("Paris")]<|tool_call_end|>'],
    ["a truncated call", '<|tool_call_start|>[get_weather(city="Par'],
    ["an empty block", "<|tool_call_start|><|tool_call_end|>"],
    ["JSON that is not a call", '<|tool_call_start|>{"city": "Paris"}<|tool_call_end|>'],
    ["text after the list", "<|tool_call_start|>[get_time()] now<|tool_call_end|>"],
  ])("is garbled by %s", (_label, text) => {
    expect(parseLfm2(text).status).toBe("garbled");
  });

  it("is absent without the start token", () => {
    expect(parseLfm2('[get_weather(city="Paris")]')).toEqual({ status: "absent" });
  });
});
