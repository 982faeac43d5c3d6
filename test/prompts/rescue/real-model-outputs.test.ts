/**
 * Rescue on what real pretrained models wrote (captured from llama-server, see each fixture's
 * provenance). Qwen2.5-Coder 0.5B writes its second call as bare JSON text and stops before
 * closing it, and without a tools field it writes a positional call. Neither is a call the loop may
 * run (a cut-off call is never completed by guesswork, ADR 007/010): both go to a retry nudge that
 * quotes them, and the nudge worked on the real model (test/integration/real-model). Gemma 3 270M
 * (the base model, no chat template) never writes a call in any format: it continues the ChatML
 * transcript the server's fallback template gives it, and rescue must find nothing there.
 * Qwen2.5-Coder 1.5B writes its calls in the doubled braces its template's tool prompt shows
 * (`{{"name": …}}}`): not JSON, so not rescued today.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { retryNudge } from "../../../src/prompts/nudges.ts";
import { detectToolCalls, rescueToolCall } from "../../../src/prompts/rescue/index.ts";

interface CapturedOutput {
  name: string;
  content: string;
}

/** The captured outputs of one fixture file under test/fixtures/real-model/. */
function capturedOutputs(file: string): CapturedOutput[] {
  const url = new URL(`../../fixtures/real-model/${file}`, import.meta.url);
  return (JSON.parse(readFileSync(url, "utf8")) as { outputs: CapturedOutput[] }).outputs;
}

const tools = ["get_weather", "report_weather"];

/** Each text's retry nudge quotes its first `quoted` characters and lists the tools. */
function expectQuotingNudges(texts: readonly string[], quoted: number): void {
  for (const text of texts) {
    const nudge = retryNudge(text, tools);
    expect(nudge).toContain(text.slice(0, quoted));
    expect(nudge).toContain("Available tools: get_weather, report_weather.");
  }
}
const qwen = capturedOutputs("qwen2.5-coder-0.5b-instruct.json");
const output = (prefix: string) => {
  const found = qwen.find((entry) => entry.name.startsWith(prefix));
  if (!found) throw new Error(`no captured output named ${prefix}…`);
  return found.content;
};

describe("rescue on Qwen2.5-Coder 0.5B's captured outputs", () => {
  it("does not complete its bare JSON call cut off before the closing quote and braces", () => {
    const text = output("second turn");
    expect(rescueToolCall(text, tools)).toBeNull();
    // The same call, closed, is rescued as bare JSON with the value copied.
    expect(rescueToolCall(`${text}"}}`, tools)).toEqual([
      {
        tool: "report_weather",
        args: { city: "Paris", report: "The weather in Paris is currently 17°C with a cloudy sky." },
      },
    ]);
  });

  it("does not read a positional call with a bare word as its value", () => {
    expect(rescueToolCall(output("first turn"), tools)).toBeNull();
  });

  it("answers both with a retry nudge that quotes the output and lists the tools", () => {
    expectQuotingNudges([output("second turn"), output("first turn")], 60);
  });
});

describe("rescue on Gemma 3 270M's captured outputs (base model, ChatML fallback template)", () => {
  const gemma = capturedOutputs("gemma-3-270m.json");

  it("holds the outputs of both tool modes and both samplings", () => {
    expect(gemma.map((entry) => entry.name.split(",")[1]?.trim())).toEqual(
      expect.arrayContaining([
        "native tools",
        "prompt mode (the tool prompt in the system message)",
        "prompt mode",
      ]),
    );
  });

  it.each(gemma.map((entry) => [entry.name, entry.content] as const))(
    "finds no call in any format: %s",
    (_name, text) => {
      expect(detectToolCalls(text, tools)).toEqual({ status: "absent" });
      expect(rescueToolCall(text, tools)).toBeNull();
    },
  );

  it("answers each with a retry nudge that quotes the output and lists the tools", () => {
    expectQuotingNudges(
      gemma.map((entry) => entry.content),
      40,
    );
  });
});

describe("rescue on Qwen2.5-Coder 1.5B's captured outputs (doubled braces from its template)", () => {
  const qwen15 = capturedOutputs("qwen2.5-coder-1.5b-instruct.json");

  it("does not read a call wrapped in the template's doubled braces: it is not JSON, and JSON is never repaired", () => {
    for (const { content } of qwen15) {
      expect(content.startsWith('{{"name": ')).toBe(true);
      expect(rescueToolCall(content, tools)).toBeNull();
    }
  });

  it("reads the calls, values copied right, once each line's first brace is taken off", () => {
    const [first] = qwen15;
    if (!first) throw new Error("no captured output");
    // The closing braces are not doubled consistently (four after the first call, three after the
    // second): a rescue of this shape is a repair, which ADR 010 rules out; this shows what it would give.
    const undoubled = first.content
      .split("\n")
      .map((line) => line.replace(/^\{\{/, "{"))
      .join("\n");
    expect(rescueToolCall(undoubled, tools)).toEqual([
      { tool: "get_weather", args: { city: "Paris" } },
      { tool: "report_weather", args: { city: "Paris", report: "It's sunny and warm in Paris." } },
    ]);
  });
});
