import { describe, expect, it } from "vitest";
import { parsePythonic } from "../../../src/prompts/rescue/pythonic.ts";

const context = { toolNames: ["get_weather", "get_time"] };
const paris = { tool: "get_weather", args: { city: "Paris" } };
const cet = { tool: "get_time", args: { zone: "CET" } };

describe("parsePythonic", () => {
  it("reads Llama 3.2's call list", () => {
    expect(parsePythonic('[get_weather(city="Paris"), get_time(zone="CET")]', context)).toEqual({
      status: "found",
      calls: [paris, cet],
    });
  });

  it("reads a list after prose and before LFM2's sentence", () => {
    expect(parsePythonic('Let me check.\n[get_weather(city="Paris")]Checking the weather.', context)).toEqual(
      {
        status: "found",
        calls: [paris],
      },
    );
  });

  it("reads calls alone on their lines", () => {
    expect(parsePythonic('get_weather(city="Paris")\nget_time(zone="CET");', context)).toEqual({
      status: "found",
      calls: [paris, cet],
    });
  });

  it("reads Python literals in the arguments", () => {
    const text = `[get_weather(city='It\\'s "here"', days=3, metric=True, hours=[1, 2], extra={'a': None})]`;
    expect(parsePythonic(text, context)).toEqual({
      status: "found",
      calls: [
        {
          tool: "get_weather",
          args: { city: `It's "here"`, days: 3, metric: true, hours: [1, 2], extra: { a: null } },
        },
      ],
    });
  });

  it.each([
    ["prose mentioning a call mid-line", 'You can call get_weather(city="Paris") for that.'],
    ["a call followed by prose on its line", 'get_weather(city="Paris") is what I would call.'],
    ["an unknown function", "[print(x)]"],
    ["math", "f(x) = x + 1"],
    ["a call inside a JSON string", '{"tool": "x", "args": {"m": "[get_weather(city=\\"Paris\\")]"}}'],
  ])("ignores %s", (_label, text) => {
    expect(parsePythonic(text, context)).toEqual({ status: "absent" });
  });

  it("is absent without tool names", () => {
    expect(parsePythonic('[get_weather(city="Paris")]')).toEqual({ status: "absent" });
  });

  it.each([
    ["a positional argument", '[get_weather("Paris")]'],
    ["a variable", "[get_weather(city=paris)]"],
    ["an unclosed string", '[get_weather(city="Paris)]'],
    ["an unknown call in a list of known ones", '[get_weather(city="Paris"), delete_all()x]'],
  ])("is garbled by %s", (_label, text) => {
    expect(parsePythonic(text, context).status).toBe("garbled");
  });
});
