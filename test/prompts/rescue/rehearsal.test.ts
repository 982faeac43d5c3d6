import { describe, expect, it } from "vitest";
import { parseRehearsal } from "../../../src/prompts/rescue/rehearsal.ts";

describe("parseRehearsal", () => {
  it("reads name[ARGS]{json}", () => {
    expect(parseRehearsal('get_weather[ARGS]{"city": "Paris"}')).toEqual({
      status: "found",
      calls: [{ tool: "get_weather", args: { city: "Paris" } }],
    });
  });

  it("reads several calls with prose around them", () => {
    const text = 'I will call get_weather[ARGS]{"city": "Paris"} and then get_time[ARGS] {} to compare.';
    expect(parseRehearsal(text)).toEqual({
      status: "found",
      calls: [
        { tool: "get_weather", args: { city: "Paris" } },
        { tool: "get_time", args: {} },
      ],
    });
  });

  it("tolerates a [CALL_ID] between name and args", () => {
    expect(parseRehearsal('get_weather[CALL_ID]a1B2c3D4e[ARGS]{"city": "Paris"}')).toEqual({
      status: "found",
      calls: [{ tool: "get_weather", args: { city: "Paris" } }],
    });
  });

  it("does not read [ARGS] inside an argument string as a call", () => {
    expect(parseRehearsal('note[ARGS]{"text": "write x[ARGS]{} here"}')).toEqual({
      status: "found",
      calls: [{ tool: "note", args: { text: "write x[ARGS]{} here" } }],
    });
  });

  it.each([
    ["truncated args", 'get_weather[ARGS]{"city": "Par'],
    ["array args", 'get_weather[ARGS]["Paris"]'],
    ["no args", "get_weather[ARGS]"],
    ["single-quoted args", "get_weather[ARGS]{'city': 'Paris'}"],
  ])("is garbled by %s", (_label, text) => {
    expect(parseRehearsal(text).status).toBe("garbled");
  });

  it("is absent without [ARGS]", () => {
    expect(parseRehearsal('get_weather({"city": "Paris"})')).toEqual({ status: "absent" });
  });
});
