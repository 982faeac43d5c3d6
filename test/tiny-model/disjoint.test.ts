/**
 * forge-tiny's training data (tools/tiny-model/forge_gen.py) must not contain the eval scenarios'
 * or the demo's tool names, user messages or argument values, so eval scores measure
 * generalisation rather than memorisation. The generator filters these strings itself
 * (`forbidden_strings()`, read from the source files); this test collects them independently from
 * the scenario objects and checks a large sample drawn with the trainer's own seeds.
 */
import { describe, expect, it } from "vitest";
import { ALL_SCENARIOS } from "../../eval/scenarios/index.ts";
import { DEMO_QUESTION, weatherWorkflow } from "../../scripts/demo-workflow.ts";
import { type Sample, type SampleOptions, sampleConversations } from "../helpers/forge-gen.ts";

/**
 * 20,000 conversations: the first draws of a fresh run's data worker (seed 1 * 7919 * 1000) in
 * both phases (`--short`, then full), the tokenizer's seed, and the copy probe's held-out seed.
 * A resumed run draws from a time-based seed, so the sample stands in for those.
 */
const DRAWS: readonly Omit<SampleOptions, "fields">[] = [
  { seed: 7_919_000, count: 6000, short: true },
  { seed: 7_919_000, count: 8000 },
  { seed: 777, count: 4000 },
  { seed: 999_999, count: 2000 },
];

/** Names and ids inside a sentence: capitalised words, or words with a digit, `_` or `-`. */
function valueWords(text: string): string[] {
  return (text.match(/[A-Za-z][A-Za-z0-9_-]{2,}/g) ?? []).filter(
    (word) => /^[A-Z]/.test(word) || /[0-9_-]/.test(word),
  );
}

/** Every string inside an argument value. */
function stringsIn(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(stringsIn);
  if (value !== null && typeof value === "object") return Object.values(value).flatMap(stringsIn);
  return [];
}

/** What a conversation says: every message's content and every call's arguments, lower-cased. */
function textOf(sample: Sample): string {
  const parts: string[] = [];
  for (const message of sample.messages ?? []) {
    if (typeof message.content === "string") parts.push(message.content);
    for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
      parts.push(JSON.stringify(call));
    }
  }
  return parts.join("\n").toLowerCase();
}

describe("forge-tiny training data vs the eval scenarios and the demo", () => {
  it("shares no tool name, user message or argument value with any eval scenario or the demo", async () => {
    expect(ALL_SCENARIOS.length).toBeGreaterThan(0);
    const tools = new Set(Object.keys(weatherWorkflow().tools));
    const messages = [DEMO_QUESTION.toLowerCase()];
    const values = new Set(valueWords(DEMO_QUESTION));
    for (const scenario of ALL_SCENARIOS) {
      for (const name of Object.keys(scenario.build().workflow.tools)) tools.add(name);
      for (const step of scenario.reference) {
        tools.add(step.tool);
        for (const value of stringsIn(step.args)) values.add(value);
      }
      messages.push(scenario.userMessage.trim().toLowerCase());
      for (const word of valueWords(scenario.userMessage)) values.add(word);
    }
    const evalTools = new Set([...tools].map((name) => name.toLowerCase()));
    const evalValues = new Set([...values].map((value) => value.toLowerCase()));
    expect(evalTools.has("get_weather")).toBe(true);
    expect(evalValues.has("paris")).toBe(true);

    const samples = (
      await Promise.all(
        DRAWS.map((draw) => sampleConversations({ ...draw, fields: ["messages", "toolNames", "values"] })),
      )
    ).flat();
    expect(samples).toHaveLength(20_000);
    const sharedTools = new Set<string>();
    const sharedMessages = new Set<string>();
    const sharedValues = new Set<string>();
    let generatedValues = 0;
    for (const sample of samples) {
      for (const name of sample.toolNames ?? []) {
        if (evalTools.has(name.toLowerCase())) sharedTools.add(name);
      }
      for (const value of sample.values ?? []) {
        generatedValues += 1;
        if (evalValues.has(value.toLowerCase())) sharedValues.add(value);
      }
      const text = textOf(sample);
      for (const message of messages) if (text.includes(message)) sharedMessages.add(message);
    }
    expect(generatedValues).toBeGreaterThan(samples.length);
    expect([...sharedTools], "eval or demo tool names among the generated tools").toEqual([]);
    expect([...sharedMessages], "eval or demo user messages in the generated conversations").toEqual([]);
    expect([...sharedValues], "eval or demo values among the generated values").toEqual([]);
  }, 120_000);
});
