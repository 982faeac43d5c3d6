/** The pure OpenAI-shaped history → Anthropic Messages conversion. */
import { describe, expect, it } from "vitest";
import { toAnthropicMessages, UNANSWERED_TOOL_RESULT } from "../../src/clients/anthropic/messages.ts";
import { createMessage, MessageType, serializeHistory } from "../../src/core/messages.ts";

const call = (id: string, name: string, args: Record<string, unknown>) => ({
  id,
  type: "function",
  function: { name, arguments: JSON.stringify(args) },
});

describe("toAnthropicMessages", () => {
  it("moves every system message to `system`", () => {
    const converted = toAnthropicMessages([
      { role: "system", content: "You are a weather bot." },
      { role: "user", content: "Hi" },
      { role: "system", content: "Be brief." },
    ]);
    expect(converted.system).toBe("You are a weather bot.\n\nBe brief.");
    expect(converted.messages).toEqual([{ role: "user", content: [{ type: "text", text: "Hi" }] }]);
  });

  it("has no system when there is none", () => {
    expect(toAnthropicMessages([{ role: "user", content: "Hi" }]).system).toBeUndefined();
  });

  it("turns tool_calls into tool_use blocks after the text, and tool results into tool_result blocks", () => {
    const { messages } = toAnthropicMessages([
      { role: "user", content: "Weather in Paris and Rome?" },
      {
        role: "assistant",
        content: "Checking both.",
        tool_calls: [
          call("call_1", "get_weather", { city: "Paris" }),
          call("call_2", "get_weather", { city: "Rome" }),
        ],
      },
      { role: "tool", content: "18°C", tool_call_id: "call_2", name: "get_weather" },
      { role: "tool", content: "22°C", tool_call_id: "call_1", name: "get_weather" },
    ]);
    expect(messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Weather in Paris and Rome?" }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Checking both." },
          { type: "tool_use", id: "call_1", name: "get_weather", input: { city: "Paris" } },
          { type: "tool_use", id: "call_2", name: "get_weather", input: { city: "Rome" } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "call_1", content: "22°C" },
          { type: "tool_result", tool_use_id: "call_2", content: "18°C" },
        ],
      },
    ]);
  });

  it("answers an unpaired tool_use with a synthetic is_error result", () => {
    const { messages } = toAnthropicMessages([
      { role: "user", content: "Go" },
      {
        role: "assistant",
        content: "",
        tool_calls: [call("a", "get_weather", { city: "Paris" }), call("b", "launch", {})],
      },
      { role: "tool", content: "[UnknownTool] launch does not exist", tool_call_id: "b", name: "launch" },
      { role: "user", content: "Try again." },
    ]);
    expect(messages[2]).toEqual({
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "a", content: UNANSWERED_TOOL_RESULT, is_error: true },
        { type: "tool_result", tool_use_id: "b", content: "[UnknownTool] launch does not exist" },
        { type: "text", text: "Try again." },
      ],
    });
  });

  it("adds a user turn of synthetic results when the history ends on tool calls, or goes on without results", () => {
    const { messages } = toAnthropicMessages([
      { role: "user", content: "Go" },
      { role: "assistant", content: "", tool_calls: [call("a", "get_weather", {})] },
    ]);
    expect(messages.at(-1)).toEqual({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "a", content: UNANSWERED_TOOL_RESULT, is_error: true }],
    });

    const followed = toAnthropicMessages([
      { role: "user", content: "Go" },
      { role: "assistant", content: "", tool_calls: [call("a", "get_weather", {})] },
      { role: "assistant", content: "Never mind." },
    ]).messages;
    // Merged into one assistant turn, whose call still gets its answer right after it.
    expect(followed).toHaveLength(3);
    expect(followed[2]?.content).toEqual([
      { type: "tool_result", tool_use_id: "a", content: UNANSWERED_TOOL_RESULT, is_error: true },
    ]);
  });

  it("merges consecutive same-role messages and drops empty text", () => {
    const { messages } = toAnthropicMessages([
      { role: "user", content: "First" },
      { role: "user", content: "" },
      { role: "user", content: "Second" },
      { role: "assistant", content: "Thinking out loud." },
      { role: "assistant", content: "", tool_calls: [call("x", "get_weather", { city: "Oslo" })] },
      { role: "tool", content: "cold", tool_call_id: "x", name: "get_weather" },
      { role: "user", content: "And now?" },
    ]);
    expect(messages.map((message) => message.role)).toEqual(["user", "assistant", "user"]);
    expect(messages[0]?.content).toEqual([
      { type: "text", text: "First" },
      { type: "text", text: "Second" },
    ]);
    expect(messages[1]?.content).toEqual([
      { type: "text", text: "Thinking out loud." },
      { type: "tool_use", id: "x", name: "get_weather", input: { city: "Oslo" } },
    ]);
    expect(messages[2]?.content).toEqual([
      { type: "tool_result", tool_use_id: "x", content: "cold" },
      { type: "text", text: "And now?" },
    ]);
  });

  it("matches a result without tool_call_id by tool name, and turns a result that answers nothing into text", () => {
    const { messages } = toAnthropicMessages([
      { role: "user", content: "Go" },
      { role: "tool", content: "stray", tool_call_id: "gone", name: "get_weather" },
      { role: "assistant", content: "", tool_calls: [call("a", "get_weather", {})] },
      { role: "tool", content: "sunny", name: "get_weather" },
    ]);
    expect(messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "Go" },
          { type: "text", text: "[Tool result for get_weather] stray" },
        ],
      },
      { role: "assistant", content: [{ type: "tool_use", id: "a", name: "get_weather", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "a", content: "sunny" }] },
    ]);
  });

  it("replaces characters Anthropic does not allow in ids, on both sides, and invents missing ids", () => {
    const { messages } = toAnthropicMessages([
      { role: "user", content: "Go" },
      {
        role: "assistant",
        content: "",
        tool_calls: [
          { ...call("call:0.1", "get_weather", {}) },
          { type: "function", function: { name: "report", arguments: "{}" } },
        ],
      },
      { role: "tool", content: "ok", tool_call_id: "call:0.1", name: "get_weather" },
      { role: "tool", content: "done", name: "report" },
    ]);
    expect(messages[1]?.content).toEqual([
      { type: "tool_use", id: "call_0_1", name: "get_weather", input: {} },
      { type: "tool_use", id: "toolu_forge_1", name: "report", input: {} },
    ]);
    expect(messages[2]?.content).toEqual([
      { type: "tool_result", tool_use_id: "call_0_1", content: "ok" },
      { type: "tool_result", tool_use_id: "toolu_forge_1", content: "done" },
    ]);
  });

  it("does not mutate its input", () => {
    const input = [
      { role: "system", content: "S" },
      { role: "user", content: "U" },
      { role: "assistant", content: "", tool_calls: [call("a", "t", { k: 1 })] },
    ];
    const copy = structuredClone(input);
    toAnthropicMessages(input);
    expect(input).toEqual(copy);
  });

  it("converts a history the loop serialized (nudges, reasoning, retries) into a valid alternation", () => {
    const history = serializeHistory(
      [
        createMessage("system", "Weather bot.", { type: MessageType.SYSTEM_PROMPT }),
        createMessage("user", "Weather in Paris?", { type: MessageType.USER_INPUT }),
        createMessage("assistant", "I should answer directly.", { type: MessageType.TEXT_RESPONSE }),
        createMessage("user", "That was not a valid tool call.", { type: MessageType.RETRY_NUDGE }),
        createMessage("assistant", "Need the weather first.", { type: MessageType.REASONING }),
        createMessage(
          "assistant",
          "",
          { type: MessageType.TOOL_CALL },
          { toolCalls: [{ name: "report", args: { text: "sunny" }, callId: "c1" }] },
        ),
        createMessage(
          "tool",
          "[StepEnforcementError] cannot call report yet",
          { type: MessageType.STEP_NUDGE },
          { toolCallId: "c1", toolName: "report" },
        ),
        createMessage(
          "assistant",
          "",
          { type: MessageType.TOOL_CALL },
          { toolCalls: [{ name: "get_weather", args: { city: "Paris" }, callId: "c2" }] },
        ),
        createMessage(
          "tool",
          "22°C",
          { type: MessageType.TOOL_RESULT },
          { toolCallId: "c2", toolName: "get_weather" },
        ),
      ],
      "openai",
    );
    const { system, messages } = toAnthropicMessages(history);

    expect(system).toBe("Weather bot.");
    expect(messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "user",
      "assistant",
      "user",
      "assistant",
      "user",
    ]);
    expect(messages[3]?.content).toEqual([
      { type: "text", text: "Need the weather first." },
      { type: "tool_use", id: "c1", name: "report", input: { text: "sunny" } },
    ]);
    // Every tool_use is answered in the very next message.
    messages.forEach((message, index) => {
      if (message.role !== "assistant" || typeof message.content === "string") return;
      const ids = message.content.flatMap((block) => (block.type === "tool_use" ? [block.id] : []));
      const next = messages[index + 1]?.content;
      const answered = Array.isArray(next)
        ? next.flatMap((block) => (block.type === "tool_result" ? [block.tool_use_id] : []))
        : [];
      expect(answered).toEqual(ids);
    });
  });
});
