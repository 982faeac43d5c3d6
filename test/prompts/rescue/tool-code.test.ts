import { describe, expect, it } from "vitest";
import { parseToolCode } from "../../../src/prompts/rescue/tool-code.ts";

const paris = { tool: "get_weather", args: { city: "Paris" } };

describe("parseToolCode", () => {
  it.each([
    ["Gemma 3's print()", '```tool_code\nprint(get_weather(city="Paris"))\n```'],
    ["a bare call", '```tool_code\nget_weather(city="Paris")\n```'],
    ["a call list", '```tool_code\n[get_weather(city="Paris")]\n```'],
    [
      "prose around the fence",
      'Sure, let me look.\n```tool_code\nget_weather(city="Paris")\n```\nOne moment.',
    ],
    ["an unclosed fence", '```tool_code\nprint(get_weather(city="Paris"))'],
    ["an upper-case language", '```TOOL_CODE\nget_weather(city="Paris")\n```'],
  ])("reads %s", (_label, text) => {
    expect(parseToolCode(text)).toEqual({ status: "found", calls: [paris] });
  });

  it("reads several statements, by line or by ';'", () => {
    const text = '```tool_code\nget_weather(city="Paris"); get_time(zone="CET")\nprint(get_time())\n```';
    expect(parseToolCode(text)).toEqual({
      status: "found",
      calls: [paris, { tool: "get_time", args: { zone: "CET" } }, { tool: "get_time", args: {} }],
    });
  });

  it("keeps a fence's string holding a closing fence", () => {
    const text = '```tool_code\nwrite(text="```md```")\n```';
    expect(parseToolCode(text)).toEqual({
      status: "found",
      calls: [{ tool: "write", args: { text: "```md```" } }],
    });
  });

  it.each([
    ["a variable", "```tool_code\nx = get_weather(city='Paris')\n```"],
    ["an expression", "```tool_code\nprint(1 + 2)\n```"],
    ["a positional argument", '```tool_code\nget_weather("Paris")\n```'],
    ["print inside print", "```tool_code\nprint(print(get_time()))\n```"],
  ])("is garbled by %s", (_label, text) => {
    expect(parseToolCode(text).status).toBe("garbled");
  });

  it("is absent without a tool_code fence", () => {
    expect(parseToolCode('```python\nget_weather(city="Paris")\n```')).toEqual({ status: "absent" });
    expect(parseToolCode("```tool_code\n```")).toEqual({ status: "absent" });
  });
});
