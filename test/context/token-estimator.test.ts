import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  charRatioEstimator,
  estimateTokensByChars,
  jsonLength,
  MESSAGE_OVERHEAD_TOKENS,
} from "../../src/context/token-estimator.ts";
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

describe("charRatioEstimator", () => {
  it("charges ceil(chars / ratio), tool calls included, and at ratio 4 equals the default", () => {
    const message = createMessage(MessageRole.USER, "123456", { type: MessageType.USER_INPUT });
    expect(charRatioEstimator(2.4)(message)).toBe(3 + MESSAGE_OVERHEAD_TOKENS);
    const [call] = executedBatch(0, ["a"]);
    expect(charRatioEstimator(4)(call!)).toBe(estimateTokensByChars(call!));
    expect(charRatioEstimator(2)(call!)).toBeGreaterThan(estimateTokensByChars(call!));
  });

  it("refuses a ratio that is not a positive number", () => {
    expect(() => charRatioEstimator(0)).toThrow(RangeError);
    expect(() => charRatioEstimator(Number.NaN)).toThrow(/charsPerToken/);
  });
});

describe("jsonLength", () => {
  it("equals the JSON length of any JSON value whose strings need no escapes", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const json = JSON.stringify(value);
        if (json.includes("\\")) expect(jsonLength(value)).toBeLessThan(json.length);
        else expect(jsonLength(value)).toBe(json.length);
      }),
      { numRuns: 1000 },
    );
  });

  it("skips undefined members and writes null for undefined array items, as JSON does", () => {
    const value = { a: undefined, b: [undefined, 1], c: "x" };
    expect(jsonLength(value)).toBe(JSON.stringify(value).length);
    expect(jsonLength({})).toBe(2);
    expect(jsonLength([])).toBe(2);
    expect(jsonLength(Number.NaN)).toBe(4);
  });
});
