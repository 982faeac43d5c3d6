import { describe, expect, it } from "vitest";
import { parseHermes } from "../../../src/prompts/rescue/hermes.ts";

const paris = { tool: "get_weather", args: { city: "Paris" } };

describe("parseHermes", () => {
  it("reads Qwen2.5's output", () => {
    const text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
    expect(parseHermes(text)).toEqual({ status: "found", calls: [paris] });
  });

  it("reads several blocks, with prose before them", () => {
    const text = [
      "I'll check both cities.",
      '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
      '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lyon"}}\n</tool_call>',
    ].join("\n");
    expect(parseHermes(text)).toEqual({
      status: "found",
      calls: [paris, { tool: "get_weather", args: { city: "Lyon" } }],
    });
  });

  it("tolerates a missing closing tag at the end of the output", () => {
    const text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n';
    expect(parseHermes(text)).toEqual({ status: "found", calls: [paris] });
  });

  it("tolerates a missing closing tag before the next block", () => {
    const text =
      '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}\n<tool_call>{"name": "get_time", "arguments": {}}</tool_call>';
    expect(parseHermes(text)).toEqual({ status: "found", calls: [paris, { tool: "get_time", args: {} }] });
  });

  it("reads a code fence inside the tags", () => {
    const text =
      '<tool_call>\n```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```\n</tool_call>';
    expect(parseHermes(text)).toEqual({ status: "found", calls: [paris] });
  });

  it("reads Qwen3-Coder XML inside the tags", () => {
    const text =
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>";
    expect(parseHermes(text)).toEqual({ status: "found", calls: [paris], textValued: [0] });
  });

  it("marks which calls of a mixed batch have text values", () => {
    const text =
      '<tool_call>{"name": "get_time", "arguments": {"utc": true}}</tool_call>\n<tool_call><function=get_weather><parameter=city>Paris</parameter></function></tool_call>';
    expect(parseHermes(text)).toEqual({
      status: "found",
      calls: [{ tool: "get_time", args: { utc: true } }, paris],
      textValued: [1],
    });
  });

  it.each([
    ["truncated JSON", '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par'],
    ["array arguments", '<tool_call>\n{"name": "get_weather", "arguments": ["Paris"]}\n</tool_call>'],
    ["JSON that is not a call", '<tool_call>\n{"city": "Paris"}\n</tool_call>'],
    ["an empty block", "<tool_call></tool_call>"],
    ["a python dict", "<tool_call>\n{'name': 'get_weather', 'arguments': {'city': 'Paris'}}\n</tool_call>"],
  ])("is garbled by %s", (_label, text) => {
    expect(parseHermes(text).status).toBe("garbled");
  });

  it("is garbled when one block of a batch is broken", () => {
    const text =
      '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>\n<tool_call>{"name": "get_weather", "arguments": {"city": </tool_call>';
    expect(parseHermes(text).status).toBe("garbled");
  });

  it("is absent without the tag", () => {
    expect(parseHermes('{"name": "get_weather", "arguments": {}}')).toEqual({ status: "absent" });
  });
});
