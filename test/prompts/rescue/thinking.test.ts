import { describe, expect, it } from "vitest";
import { stripThinking } from "../../../src/prompts/rescue/thinking.ts";

describe("stripThinking", () => {
  it("removes closed think blocks", () => {
    expect(stripThinking("<think>call a?</think>answer<think>more</think>!")).toBe("answer!");
  });

  it("removes reasoning whose <think> the chat template opened", () => {
    expect(stripThinking("the user wants a</think>\n\nanswer")).toBe("\n\nanswer");
  });

  it("drops an unclosed think block to the end", () => {
    expect(stripThinking('answer <think>maybe {"tool": "a"}')).toBe("answer ");
  });

  it("removes [THINK] blocks (Magistral, Ministral Reasoning) by the same rules", () => {
    expect(stripThinking('[THINK]call a?[/THINK][TOOL_CALLS]b{"x": 1}')).toBe('[TOOL_CALLS]b{"x": 1}');
    expect(stripThinking("reasoning[/THINK]answer")).toBe("answer");
    expect(stripThinking("answer [THINK]maybe")).toBe("answer ");
    expect(stripThinking("<think>a</think>[THINK]b[/THINK]c")).toBe("c");
  });

  it("removes gpt-oss's harmony analysis messages, but not a call addressed from that channel", () => {
    expect(
      stripThinking(
        "<|channel|>analysis<|message|>maybe to=functions.a?<|end|><|start|>assistant<|channel|>final<|message|>Hi",
      ),
    ).toBe("<|start|>assistant<|channel|>final<|message|>Hi");
    expect(stripThinking("<|channel|>analysis<|message|>cut off {")).toBe("");
    const call = '<|channel|>analysis to=functions.a <|constrain|>json<|message|>{"x":1}<|call|>';
    expect(stripThinking(call)).toBe(call);
  });

  it("leaves text without think tags alone", () => {
    expect(stripThinking("plain")).toBe("plain");
  });
});
