/**
 * A cut-off repetition (docs/decisions/038): the real Qwen2.5-Coder 0.5B, looping, writes its JSON
 * calls again and again until the token cap cuts the last copy off. The copies are dropped and one
 * of each distinct call is kept; a call cut off that is no copy still makes the answer unreadable,
 * as does a broken call anywhere but at the end (captured outputs:
 * test/fixtures/real-model/qwen2.5-coder-0.5b-cut-off-repetition.json).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { ToolCall } from "../../../src/core/types.ts";
import { rescueToolCall } from "../../../src/prompts/rescue/index.ts";
import { parseJsonCalls } from "../../../src/prompts/rescue/json-call.ts";

const captured = JSON.parse(
  readFileSync(
    new URL("../../fixtures/real-model/qwen2.5-coder-0.5b-cut-off-repetition.json", import.meta.url),
    "utf8",
  ),
) as { outputs: { name: string; tools: string[]; content: string; expected: ToolCall[] | null }[] };

describe("a cut-off repetition of JSON calls", () => {
  it.each(captured.outputs.map((output) => [output.name, output] as const))("%s", (_name, output) => {
    expect(rescueToolCall(output.content, output.tools)).toEqual(output.expected);
  });

  const call = '{"name": "get_weather", "arguments": {"city": "Lisboa"}}';

  it("drops the cut-off copy and keeps one of each call", () => {
    expect(parseJsonCalls(`${call}\n${call}\n${call}\n{"name": "get_wea`)).toEqual({
      status: "found",
      calls: [{ tool: "get_weather", args: { city: "Lisboa" } }],
    });
  });

  it("keeps repeated calls as written when nothing was cut off", () => {
    const outcome = parseJsonCalls(`${call}\n${call}`);
    expect(outcome.status === "found" && outcome.calls).toHaveLength(2);
  });

  it("stays garbled for a cut-off call that is no copy, or a broken call before the end", () => {
    expect(parseJsonCalls(`${call}\n{"name": "report_weather", "arguments": {"city": "Lis`).status).toBe(
      "garbled",
    );
    expect(parseJsonCalls(`{"name": "get_wea\n${call}`).status).toBe("garbled");
    expect(parseJsonCalls('{"name": "get_weather", "arguments": {"city": "Lisboa"}').status).toBe("garbled");
  });
});
