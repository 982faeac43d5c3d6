import { describe, expect, it } from "vitest";
import { readToolCalls } from "../../../src/prompts/rescue/call-shape.ts";

describe("readToolCalls", () => {
  it("reads tool/args", () => {
    expect(readToolCalls({ tool: "get_weather", args: { city: "Paris" } })).toEqual({
      kind: "calls",
      calls: [{ tool: "get_weather", args: { city: "Paris" } }],
    });
  });

  it.each([
    ["arguments", { name: "get_weather", arguments: { city: "Paris" } }],
    ["parameters", { name: "get_weather", parameters: { city: "Paris" } }],
    ["arguments as a JSON string", { name: "get_weather", arguments: '{"city": "Paris"}' }],
    [
      "an OpenAI function wrapper",
      { type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
    ],
    ["an id", { id: "call_0", name: "get_weather", arguments: { city: "Paris" } }],
  ])("reads name with %s", (_label, value) => {
    expect(readToolCalls(value)).toEqual({
      kind: "calls",
      calls: [{ tool: "get_weather", args: { city: "Paris" } }],
    });
  });

  it("gives empty args to a call without args", () => {
    expect(readToolCalls({ name: "get_time" })).toEqual({
      kind: "calls",
      calls: [{ tool: "get_time", args: {} }],
    });
  });

  it("reads an array of calls in order", () => {
    const reading = readToolCalls([
      { name: "a", arguments: {} },
      { tool: "b", args: { x: 1 } },
    ]);
    expect(reading).toEqual({
      kind: "calls",
      calls: [
        { tool: "a", args: {} },
        { tool: "b", args: { x: 1 } },
      ],
    });
  });

  it.each([
    ["an array", { tool: "get_weather", args: ["Paris"] }],
    ["null", { tool: "get_weather", args: null }],
    ["a string that is not JSON", { name: "get_weather", arguments: "city=Paris" }],
    ["a JSON string holding an array", { name: "get_weather", arguments: '["Paris"]' }],
    ["a number", { name: "get_weather", parameters: 3 }],
  ])("rejects args that are %s", (_label, value) => {
    expect(readToolCalls(value).kind).toBe("invalid");
  });

  it("rejects an array mixing calls and data", () => {
    expect(readToolCalls([{ tool: "a", args: {} }, 3]).kind).toBe("invalid");
  });

  it.each([
    ["a plain object", { city: "Paris" }],
    ["flattened args", { name: "get_weather", city: "Paris" }],
    ["a non-string name", { name: 3, args: {} }],
    ["a string", "get_weather"],
    ["an empty array", []],
    ["an array of numbers", [1, 2]],
    ["null", null],
  ])("does not read %s as a call", (_label, value) => {
    expect(readToolCalls(value)).toEqual({ kind: "not-a-call" });
  });

  it("rejects an empty name", () => {
    expect(readToolCalls({ tool: " ", args: {} }).kind).toBe("invalid");
  });
});
