import { describe, expect, it } from "vitest";
import { estimateTokensByChars, MESSAGE_OVERHEAD_TOKENS } from "../../src/context/token-estimator.ts";
import { createMessage, MessageRole, MessageType } from "../../src/core/messages.ts";
import { executedBatch } from "./history-fixtures.ts";

describe("estimateTokensByChars", () => {
  it("charges ceil(chars / 4) of content plus the per-message overhead", () => {
    const message = createMessage(MessageRole.USER, "12345", { type: MessageType.USER_INPUT });
    expect(estimateTokensByChars(message)).toBe(2 + MESSAGE_OVERHEAD_TOKENS);
    const empty = createMessage(MessageRole.USER, "", { type: MessageType.USER_INPUT });
    expect(estimateTokensByChars(empty)).toBe(MESSAGE_OVERHEAD_TOKENS);
  });

  it("counts the serialized tool calls of an assistant message", () => {
    const [call] = executedBatch(0, ["a"]);
    const expected = Math.ceil(JSON.stringify(call!.toolCalls).length / 4) + MESSAGE_OVERHEAD_TOKENS;
    expect(estimateTokensByChars(call!)).toBe(expected);
  });
});
