/**
 * Rescue on what the real pretrained test model wrote (captured from llama-server, see the
 * fixture's provenance): Qwen2.5-Coder 0.5B writes its second call as bare JSON text and stops
 * before closing it, and without a tools field it writes a positional call. Neither is a call the
 * loop may run (a cut-off call is never completed by guesswork, ADR 007/010): both go to a retry
 * nudge that quotes them, and the nudge worked on the real model (test/integration/real-model).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { retryNudge } from "../../../src/prompts/nudges.ts";
import { rescueToolCall } from "../../../src/prompts/rescue/index.ts";

const fixture = JSON.parse(
  readFileSync(
    new URL("../../fixtures/real-model/qwen2.5-coder-0.5b-instruct.json", import.meta.url),
    "utf8",
  ),
) as { outputs: { name: string; content: string }[] };
const tools = ["get_weather", "report_weather"];
const output = (prefix: string) => {
  const found = fixture.outputs.find((entry) => entry.name.startsWith(prefix));
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
    for (const text of [output("second turn"), output("first turn")]) {
      const nudge = retryNudge(text, tools);
      expect(nudge).toContain(text.slice(0, 60));
      expect(nudge).toContain("Available tools: get_weather, report_weather.");
    }
  });
});
