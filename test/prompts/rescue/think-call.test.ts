/**
 * Calls inside unclosed reasoning (ADR 027): the shapes Qwen3 and DeepSeek-R1 style models leave
 * when they stop inside `<think>` right after writing the call, and the near misses the rule must
 * leave dropped.
 */
import { describe, expect, it } from "vitest";
import { toolSpecFromJsonSchema } from "../../../src/core/tools.ts";
import { readThinkCall, unclosedReasoning } from "../../../src/prompts/rescue/think-call.ts";

const names = ["get_weather", "read_file"];
const tools = [
  toolSpecFromJsonSchema("get_weather", "Weather of a city", {
    type: "object",
    properties: { city: { type: "string" }, days: { type: "integer" } },
  }),
];
const weather = { tool: "get_weather", args: { city: "Paris" } };
const HERMES_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';

describe("readThinkCall: read", () => {
  it("reads a Qwen3 hermes call that ends an unclosed <think>", () => {
    const text = `<think>\nOkay, the user wants the weather in Paris. I should call get_weather with city Paris.\n\n${HERMES_CALL}`;
    expect(readThinkCall(text, names)?.calls).toEqual([weather]);
  });

  it("reads the call when the output stopped before </tool_call>, the JSON complete", () => {
    const text =
      '<think>\nLet me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}';
    expect(readThinkCall(text, names)?.calls).toEqual([weather]);
  });

  it("reads a DeepSeek-R1 style fenced JSON call, trailing blank lines allowed", () => {
    const text =
      '<think>\nAlright, so the user asks about Paris. The tool get_weather takes a city.\n```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```\n\n';
    expect(readThinkCall(text, names)?.calls).toEqual([weather]);
  });

  it("reads a Qwen3-Coder XML call, its values converted by the tool's schema", () => {
    const text =
      "<think>\nThree days of forecast.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>";
    expect(readThinkCall(text, names, { tools })?.calls).toEqual([
      { tool: "get_weather", args: { city: "Paris", days: 3 } },
    ]);
  });

  it("reads a batch of blocks in a row, after a closed block of earlier reasoning", () => {
    const second = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.ts"}}\n</tool_call>';
    const text = `<think>first pass</think>\n<think>\nBoth at once.\n${HERMES_CALL}\n\n${second}\n`;
    expect(readThinkCall(text, names)?.calls).toEqual([
      weather,
      { tool: "read_file", args: { path: "a.ts" } },
    ]);
  });

  it("reads only the final block when prose separates it from a call considered earlier", () => {
    const considered = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.ts"}}\n</tool_call>';
    const text = `<think>\nMaybe:\n${considered}\nNo, the weather first.\n${HERMES_CALL}`;
    expect(readThinkCall(text, names)?.calls).toEqual([weather]);
  });

  it("reads a [THINK] block (Magistral) and counts a near-miss name as renamed", () => {
    const text = '[THINK]Paris.\n{"name": "getWeather", "arguments": {"city": "Paris"}}';
    expect(readThinkCall(text, names)).toEqual({ calls: [weather], renamed: 1 });
  });
});

describe("readThinkCall: left dropped", () => {
  it("a closed block: the call was only considered", () => {
    expect(readThinkCall(`<think>\n${HERMES_CALL}\n</think>`, names)).toBeNull();
  });

  it("an answer outside the reasoning (the rescue reads that one)", () => {
    expect(readThinkCall(`Sure.\n<think>\n${HERMES_CALL}`, names)).toBeNull();
  });

  it("more thought after the call, on its own line or on the call's line", () => {
    expect(
      readThinkCall(`<think>\n${HERMES_CALL}\nBut wait, maybe the user meant Paris, Texas.`, names),
    ).toBeNull();
    expect(readThinkCall(`<think>\n${HERMES_CALL}\nHmm (not sure)`, names)).toBeNull();
    expect(readThinkCall(`<think>\n${HERMES_CALL} or maybe not`, names)).toBeNull();
  });

  it("a call cut off mid-JSON", () => {
    expect(
      readThinkCall('<think>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par', names),
    ).toBeNull();
  });

  it("a call written inside a sentence, not on its own line", () => {
    const text = '<think>\nI could send {"name": "get_weather", "arguments": {"city": "Paris"}}';
    expect(readThinkCall(text, names)).toBeNull();
  });

  it("a tool that is not offered", () => {
    const text = '<think>\n<tool_call>\n{"name": "delete_everything", "arguments": {}}\n</tool_call>';
    expect(readThinkCall(text, names)).toBeNull();
  });

  it("reasoning with no call, and no reasoning at all", () => {
    expect(
      readThinkCall("<think>\nThe user wants the weather. Let me think about which tool", names),
    ).toBeNull();
    expect(readThinkCall(HERMES_CALL, names)).toBeNull();
  });
});

describe("unclosedReasoning", () => {
  it("is the last block's text only when it is never closed and nothing is outside", () => {
    expect(unclosedReasoning("<think>a</think><think>b")).toBe("b");
    expect(unclosedReasoning("<think>a</think>")).toBeNull();
    expect(unclosedReasoning("answer <think>b")).toBeNull();
  });
});
