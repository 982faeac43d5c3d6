import { describe, expect, it } from "vitest";
import { parseFunctionGemma } from "../../../src/prompts/rescue/function-gemma.ts";

const paris = { tool: "get_weather", args: { city: "Paris" } };
const context = { toolNames: ["get_weather", "get_time"] };

describe("parseFunctionGemma", () => {
  it("reads FunctionGemma's call", () => {
    expect(
      parseFunctionGemma(
        "<start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call>",
      ),
    ).toEqual({ status: "found", calls: [paris] });
  });

  it("reads numbers, booleans, null, lists, objects and strings holding syntax", () => {
    const text =
      '<start_function_call>call:get_weather{city:<escape>Paris, {France}: "x"<escape>,days:3,ratio:-0.5,metric:true,unit:null,hours:[1,<escape>2<escape>],opts:{deep:false}}<end_function_call>';
    expect(parseFunctionGemma(text)).toEqual({
      status: "found",
      calls: [
        {
          tool: "get_weather",
          args: {
            city: 'Paris, {France}: "x"',
            days: 3,
            ratio: -0.5,
            metric: true,
            unit: null,
            hours: [1, "2"],
            opts: { deep: false },
          },
        },
      ],
    });
  });

  it("reads several calls and a call cut off before its end token", () => {
    const text =
      "<start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call><start_function_call>call:get_time{}";
    expect(parseFunctionGemma(text)).toEqual({
      status: "found",
      calls: [paris, { tool: "get_time", args: {} }],
    });
  });

  it("reads Gemma 4's tokens", () => {
    expect(parseFunctionGemma('<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>')).toEqual({
      status: "found",
      calls: [paris],
    });
  });

  it("reads a known tool's call whose tokens the server dropped", () => {
    expect(parseFunctionGemma("call:get_weather{city:Paris}", context)).toEqual({
      status: "found",
      calls: [paris],
    });
    expect(parseFunctionGemma("call:get_weather{city:<escape>Paris<escape>}", context)).toEqual({
      status: "found",
      calls: [paris],
    });
  });

  it.each([
    ["an unknown name", "call:delete_all{}"],
    ["a mid-line mention", "I will call:get_weather{city:Paris} later"],
  ])("ignores a bare call with %s", (_label, text) => {
    expect(parseFunctionGemma(text, context)).toEqual({ status: "absent" });
  });

  it("is absent without tool names or tokens", () => {
    expect(parseFunctionGemma("call:get_weather{city:Paris}")).toEqual({ status: "absent" });
  });

  it.each([
    ["no call: after the token", "<start_function_call>get_weather{}<end_function_call>"],
    ["an unclosed string", "<start_function_call>call:get_weather{city:<escape>Paris}<end_function_call>"],
    ["an unclosed object", "<start_function_call>call:get_weather{city:<escape>Paris<escape>"],
    ["a key without a value", "<start_function_call>call:get_weather{city}<end_function_call>"],
    ["text after the call", "<start_function_call>call:get_time{} now<end_function_call>"],
    ["nesting deeper than any arguments", `<start_function_call>call:get_time{a:${"[".repeat(100_000)}`],
  ])("is garbled by %s", (_label, text) => {
    expect(parseFunctionGemma(text, context).status).toBe("garbled");
  });
});
