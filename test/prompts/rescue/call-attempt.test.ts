import { describe, expect, it } from "vitest";
import { showsCallAttempt } from "../../../src/prompts/rescue/call-attempt.ts";

const tools = ["calculate_triangle_area", "search", "respond"];

describe("showsCallAttempt: the prose policy's test", () => {
  it.each([
    "The capital of France is Paris.",
    "I'm sorry, I can't help with booking flights.",
    "You could search the web for it.",
    "I will respond shortly: 25 square units.",
  ])("plain prose shows no attempt: %s", (text) => {
    expect(showsCallAttempt(text, tools, ["respond"])).toBe(false);
  });

  it.each([
    ['```json\n{"name": "calculate_triangle_area", "arguments": {"base": 10}}\n```', "a fenced call"],
    ['{"name": "other", "arguments": {}}', "call-shaped JSON naming no offered tool"],
    ["<tool_call>\n{broken</tool_call>", "call markup"],
    ["I'll use calculate_triangle_area for this.", "an identifier-like tool name"],
    ["Let me search(query='x')", "a plain-word tool name used as a call"],
    ["Calling `search` now.", "a tool name in backticks"],
    ['{{"name": "search", "arguments": {{"q": "x"}}}}', "the 1.5B's doubled braces"],
  ])("%s is an attempt (%s)", (text) => {
    expect(showsCallAttempt(text, tools, ["respond"])).toBe(true);
  });

  it("ignores the names it is told to ignore", () => {
    expect(showsCallAttempt("Calling `respond` now.", tools, ["respond"])).toBe(false);
    expect(showsCallAttempt("Calling `respond` now.", tools)).toBe(true);
  });
});
