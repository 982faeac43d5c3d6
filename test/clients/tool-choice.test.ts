import { describe, expect, it } from "vitest";
import { anthropicToolChoice, openAIToolChoice } from "../../src/clients/tool-choice.ts";

describe("tool choice on the wire", () => {
  it.each([
    ["auto", "auto", { type: "auto" }],
    ["required", "required", { type: "any" }],
    ["none", "none", { type: "none" }],
  ] as const)("maps %s", (choice, openAI, anthropic) => {
    expect(openAIToolChoice(choice)).toBe(openAI);
    expect(anthropicToolChoice(choice)).toEqual(anthropic);
  });

  it("maps a named tool", () => {
    expect(openAIToolChoice({ name: "get_weather" })).toEqual({
      type: "function",
      function: { name: "get_weather" },
    });
    expect(anthropicToolChoice({ name: "get_weather" })).toEqual({ type: "tool", name: "get_weather" });
  });
});
