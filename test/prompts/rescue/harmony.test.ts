import { describe, expect, it } from "vitest";
import { parseHarmony } from "../../../src/prompts/rescue/harmony.ts";

const paris = { tool: "get_weather", args: { city: "Paris" } };

describe("parseHarmony", () => {
  it.each([
    [
      "the recipient after the channel",
      '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>',
    ],
    [
      "the recipient before the channel",
      '<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city":"Paris"}<|call|>',
    ],
    [
      "analysis first",
      '<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>',
    ],
    ["the special tokens dropped", 'commentary to=functions.get_weather json{"city":"Paris"}'],
    ["an '=' before the args", 'to=functions.get_weather ={"city": "Paris"}'],
    ["no <|call|> at the end", '<|channel|>commentary to=functions.get_weather<|message|>{"city":"Paris"}'],
  ])("reads %s", (_label, text) => {
    expect(parseHarmony(text)).toEqual({ status: "found", calls: [paris] });
  });

  it("reads several calls, strings holding braces included", () => {
    const text =
      '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|><|start|>assistant<|channel|>commentary to=functions.note<|message|>{"text":"a } b"}<|call|>';
    expect(parseHarmony(text)).toEqual({
      status: "found",
      calls: [paris, { tool: "note", args: { text: "a } b" } }],
    });
  });

  it.each([
    ["args that never close", '<|channel|>commentary to=functions.get_weather<|message|>{"city":"Par'],
    [
      "args that are not JSON",
      "<|channel|>commentary to=functions.get_weather<|message|>{city: Paris}<|call|>",
    ],
    ["prose instead of args", "I would send this to=functions.get_weather but {not now}"],
    ["no args at all", "<|channel|>commentary to=functions.get_weather<|message|><|call|>"],
  ])("is garbled by %s", (_label, text) => {
    expect(parseHarmony(text).status).toBe("garbled");
  });

  it("is absent without a recipient", () => {
    expect(parseHarmony('<|channel|>final<|message|>{"city":"Paris"}<|return|>')).toEqual({
      status: "absent",
    });
  });
});
