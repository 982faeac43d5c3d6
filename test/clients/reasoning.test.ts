/** Splitting think tags out of model output, and the precedence of server-side reasoning. */
import { describe, expect, it } from "vitest";
import { resolveReasoning, splitReasoning } from "../../src/clients/reasoning.ts";

describe("splitReasoning", () => {
  it("splits a <think> block from the answer", () => {
    expect(splitReasoning("<think>\nParis is in France.\n</think>\n\nIt is sunny.")).toEqual({
      reasoning: "Paris is in France.",
      answer: "It is sunny.",
    });
  });

  it("splits Mistral's [THINK] block", () => {
    expect(splitReasoning('[THINK]Need a tool.[/THINK]{"tool": "a", "args": {}}')).toEqual({
      reasoning: "Need a tool.",
      answer: '{"tool": "a", "args": {}}',
    });
  });

  it("joins several blocks", () => {
    expect(splitReasoning("<think>one</think>A<think>two</think>B").reasoning).toBe("one\n\ntwo");
    expect(splitReasoning("<think>one</think>A<think>two</think>B").answer).toBe("AB");
  });

  it("treats text before a lone </think> as reasoning (the template opened the block)", () => {
    expect(splitReasoning("thinking here</think>answer")).toEqual({
      reasoning: "thinking here",
      answer: "answer",
    });
  });

  it("treats an unclosed block as reasoning cut off mid-thought", () => {
    expect(splitReasoning("Start <think>still thinking")).toEqual({
      reasoning: "still thinking",
      answer: "Start",
    });
  });

  it("has no reasoning for plain text or an empty block", () => {
    expect(splitReasoning("Just an answer.")).toEqual({ reasoning: null, answer: "Just an answer." });
    expect(splitReasoning("<think>\n\n</think>Answer")).toEqual({ reasoning: null, answer: "Answer" });
  });
});

describe("resolveReasoning", () => {
  it("prefers the server's reasoning field over tags", () => {
    expect(resolveReasoning("server", "<think>tags</think>answer", undefined)).toEqual({
      reasoning: "server",
      answer: "answer",
    });
  });

  it("falls back to tags when the server field is empty", () => {
    expect(resolveReasoning("  ", "<think>tags</think>answer", true).reasoning).toBe("tags");
  });

  it("discards reasoning when think is false, still stripping the tags from the answer", () => {
    expect(resolveReasoning("server", "<think>tags</think>answer", false)).toEqual({
      reasoning: null,
      answer: "answer",
    });
  });
});
