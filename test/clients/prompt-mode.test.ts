/** The prompt-mode rewrite of an OpenAI-shaped history for backends without native tools. */
import { describe, expect, it } from "vitest";
import {
  downgradeMessage,
  mergeConsecutiveRoles,
  toPromptModeMessages,
} from "../../src/clients/prompt-mode.ts";
import { buildToolPrompt, extractToolCall } from "../../src/prompts/tool-prompt.ts";
import { tools } from "./helpers/openai-shapes.ts";

describe("downgradeMessage", () => {
  it("turns a tool result into labelled user text (OpenAI and Ollama shapes)", () => {
    expect(
      downgradeMessage({ role: "tool", content: "22°C", tool_call_id: "c1", name: "get_weather" }),
    ).toEqual({
      role: "user",
      content: "[Tool result for get_weather] 22°C",
    });
    expect(downgradeMessage({ role: "tool", content: "22°C", tool_name: "get_weather" })).toEqual({
      role: "user",
      content: "[Tool result for get_weather] 22°C",
    });
    expect(downgradeMessage({ role: "tool", content: "22°C" })).toEqual({
      role: "user",
      content: "[Tool result] 22°C",
    });
  });

  it("turns tool calls into the JSON the tool prompt asks for, which extraction reads back", () => {
    const one = downgradeMessage({
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "c1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
      ],
    });
    expect(one).toEqual({ role: "assistant", content: '{"tool":"get_weather","args":{"city":"Paris"}}' });
    expect(extractToolCall(one.content as string, ["get_weather"])).toEqual([
      { tool: "get_weather", args: { city: "Paris" } },
    ]);

    const two = downgradeMessage({
      role: "assistant",
      content: "Both cities.",
      tool_calls: [
        { function: { name: "get_weather", arguments: { city: "Paris" } } },
        { function: { name: "get_weather", arguments: { city: "Rome" } } },
      ],
    });
    expect(two.content).toBe(
      'Both cities.\n\n[{"tool":"get_weather","args":{"city":"Paris"}},{"tool":"get_weather","args":{"city":"Rome"}}]',
    );
  });

  it("keeps plain messages' role and text, dropping other fields", () => {
    expect(downgradeMessage({ role: "user", content: "hi", extra: 1 })).toEqual({
      role: "user",
      content: "hi",
    });
  });
});

describe("mergeConsecutiveRoles", () => {
  it("merges runs of one role with a blank line, skipping empty text", () => {
    expect(
      mergeConsecutiveRoles([
        { role: "user", content: "a" },
        { role: "user", content: "" },
        { role: "user", content: "b" },
        { role: "assistant", content: "c" },
        { role: "user", content: "d" },
      ]),
    ).toEqual([
      { role: "user", content: "a\n\nb" },
      { role: "assistant", content: "c" },
      { role: "user", content: "d" },
    ]);
  });
});

describe("toPromptModeMessages", () => {
  it("appends the tool prompt to the first system message and does not mutate the input", () => {
    const input = [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Hi" },
    ];
    const copy = structuredClone(input);
    expect(toPromptModeMessages(input, tools)[0]).toEqual({
      role: "system",
      content: `Be brief.\n\n${buildToolPrompt(tools)}`,
    });
    expect(input).toEqual(copy);
  });

  it("leaves the system message alone without tools", () => {
    expect(toPromptModeMessages([{ role: "system", content: "S" }], [])).toEqual([
      { role: "system", content: "S" },
    ]);
  });
});
