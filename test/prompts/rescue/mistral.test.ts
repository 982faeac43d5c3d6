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

  describe("the name{json} form (Devstral, Mistral Small 3.x, Ministral in prompt mode)", () => {
    const read = (file: string) => ({ tool: "read", args: { file_path: file } });

    it.each([
      ["no separator", '[TOOL_CALLS]read{"file_path": "transformer.py"}'],
      ["a space", '[TOOL_CALLS]read {"file_path": "transformer.py"}'],
      ["a newline", '[TOOL_CALLS]read\n{"file_path": "transformer.py"}'],
      ["a space after the marker", '[TOOL_CALLS] read{"file_path": "transformer.py"}'],
      ["an end-of-sequence token after it", '[TOOL_CALLS]read{"file_path": "transformer.py"}</s>'],
    ])("reads it with %s", (_label, text) => {
      expect(parseMistral(text)).toEqual({ status: "found", calls: [read("transformer.py")] });
    });

    it("reads nested braces and brackets inside strings and values", () => {
      const text =
        '[TOOL_CALLS]edit{"file_path": "x.py", "old_string": "if x: { print(1) }", "new_string": "if x: { print(2) } ]", "meta": {"tags": ["a", {"b": 1}]}}';
      expect(parseMistral(text)).toEqual({
        status: "found",
        calls: [
          {
            tool: "edit",
            args: {
              file_path: "x.py",
              old_string: "if x: { print(1) }",
              new_string: "if x: { print(2) } ]",
              meta: { tags: ["a", { b: 1 }] },
            },
          },
        ],
      });
    });

    it("reads escaped quotes and backslashes inside strings", () => {
      const text = '[TOOL_CALLS]edit{"file_path": "x.py", "old_string": "say \\"hi\\" \\\\ {"}';
      expect(parseMistral(text)).toEqual({
        status: "found",
        calls: [{ tool: "edit", args: { file_path: "x.py", old_string: 'say "hi" \\ {' } }],
      });
    });

    it("reads several calls, one marker each, in order", () => {
      const text =
        '[TOOL_CALLS]read{"file_path": "a.py"}\n[TOOL_CALLS]read {"file_path": "b.py"}[TOOL_CALLS]read\n{"file_path": "c.py"}';
      expect(parseMistral(text)).toEqual({
        status: "found",
        calls: [read("a.py"), read("b.py"), read("c.py")],
      });
    });

    it("reads several calls behind one marker", () => {
      const text = '[TOOL_CALLS]read{"file_path": "a.py"} read{"file_path": "b.py"}';
      expect(parseMistral(text)).toEqual({ status: "found", calls: [read("a.py"), read("b.py")] });
    });

    it("ignores an apology before the marker", () => {
      const text =
        'I apologize for the confusion. Let me read the file first.\n[TOOL_CALLS]read{"file_path": "x.py"}';
      expect(parseMistral(text)).toEqual({ status: "found", calls: [read("x.py")] });
    });

    it("mixes with the [ARGS] form and a call id", () => {
      const text =
        '[TOOL_CALLS]read[CALL_ID]a1B2c3D4e[ARGS]{"file_path": "a.py"}[TOOL_CALLS]read{"file_path": "b.py"}';
      expect(parseMistral(text)).toEqual({ status: "found", calls: [read("a.py"), read("b.py")] });
    });

    it.each([
      ["JSON that never closes", '[TOOL_CALLS]read{"file_path": "never closed"'],
      ["JSON that is not valid", "[TOOL_CALLS]read{file_path: x.py}"],
      [
        "a second call that never closes",
        '[TOOL_CALLS]read{"file_path": "a.py"}\n[TOOL_CALLS]read{"file_path": ',
      ],
      ["a name followed by prose", "[TOOL_CALLS]read the file please"],
    ])("is garbled by %s", (_label, text) => {
      expect(parseMistral(text).status).toBe("garbled");
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
