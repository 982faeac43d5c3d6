import { describe, expect, it } from "vitest";
import { parseFenced } from "../../../src/prompts/rescue/fenced.ts";

const paris = { tool: "get_weather", args: { city: "Paris" } };

describe("parseFenced", () => {
  it("reads a ```json block after prose, as a small model writes it", () => {
    const text = [
      "To find the weather in Paris, I'll call the weather tool:",
      "",
      "```json",
      "{",
      '  "tool": "get_weather",',
      '  "args": {',
      '    "city": "Paris"',
      "  }",
      "}",
      "```",
      "",
      "This will return the current conditions.",
    ].join("\n");
    expect(parseFenced(text)).toEqual({ status: "found", calls: [paris] });
  });

  it.each([
    ["a bare fence", '```\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```'],
    ["a tool_call fence", '```tool_call\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```'],
    ["an inline fence", '```{"tool": "get_weather", "args": {"city": "Paris"}}```'],
    ["an unclosed fence at the end", '```json\n{"tool": "get_weather", "args": {"city": "Paris"}}\n'],
  ])("reads %s", (_label, text) => {
    expect(parseFenced(text)).toEqual({ status: "found", calls: [paris] });
  });

  it("reads calls from several fences in order", () => {
    const text =
      'First:\n```json\n{"tool": "get_weather", "args": {"city": "Paris"}}\n```\nThen:\n```json\n{"tool": "get_time", "args": {}}\n```';
    expect(parseFenced(text)).toEqual({ status: "found", calls: [paris, { tool: "get_time", args: {} }] });
  });

  it("ignores fences of other languages", () => {
    const text = '```python\nprint({"tool": "get_weather", "args": {"city": "Paris"}})\n```';
    expect(parseFenced(text)).toEqual({ status: "absent" });
  });

  it("ignores a JSON fence holding data, not a call", () => {
    expect(parseFenced('```json\n{"city": "Paris"}\n```')).toEqual({ status: "absent" });
  });

  it("is garbled by a truncated call in a fence", () => {
    expect(parseFenced('```json\n{"tool": "get_weather", "args": {"city": "Par').status).toBe("garbled");
  });

  it("reads a call whose string arguments hold a fence (a Markdown file's content)", () => {
    const content = "# Notes\n\n```ts\nconst x = 1;\n```\n";
    const call = { tool: "write_file", args: { path: "notes.md", content } };
    const text = `I'll write it:\n\`\`\`json\n${JSON.stringify(call)}\n\`\`\`\nDone.`;
    expect(parseFenced(text)).toEqual({ status: "found", calls: [call] });
  });

  it("still ends a fence at the first ``` when a quote in prose never closes", () => {
    const text =
      '```json\n{"tool": "get_weather", "args": {"city": "Paris"}}\n```\nHe said "hi\n```json\n{"tool": "get_time", "args": {}}\n```';
    expect(parseFenced(text)).toEqual({ status: "found", calls: [paris, { tool: "get_time", args: {} }] });
  });

  it("is absent without fences", () => {
    expect(parseFenced('{"tool": "get_weather", "args": {}}')).toEqual({ status: "absent" });
  });
});
