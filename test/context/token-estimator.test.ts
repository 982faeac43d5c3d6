import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ContextManager } from "../../src/context/context-manager.ts";
import { NoCompact } from "../../src/context/no-compact.ts";
import {
  charRatioEstimator,
  estimateTokensByChars,
  jsonLength,
  MESSAGE_OVERHEAD_TOKENS,
} from "../../src/context/token-estimator.ts";
import { createMessage, type Message, MessageRole, MessageType } from "../../src/core/messages.ts";
import { executedBatch } from "./history-fixtures.ts";

const user = (content: string) => createMessage(MessageRole.USER, content, { type: MessageType.USER_INPUT });

describe("estimateTokensByChars", () => {
  it("charges chars / 4 of one message, rounded down, with no per-message overhead", () => {
    expect(estimateTokensByChars(user("12345"))).toBe(1);
    expect(estimateTokensByChars(user("12345678"))).toBe(2);
    expect(estimateTokensByChars(user(""))).toBe(0);
    expect(estimateTokensByChars.charsPerToken).toBe(4);
  });

  it("counts the serialized tool calls of an assistant message", () => {
    const [call] = executedBatch(0, ["a"]);
    expect(call!.content).toBe("");
    expect(estimateTokensByChars(call!)).toBe(Math.floor(JSON.stringify(call!.toolCalls).length / 4));
  });
});

describe("ContextManager.estimateTokens: the seeds' total characters / 4", () => {
  const manager = () => new ContextManager({ strategy: new NoCompact(), budgetTokens: 1000 });

  it("divides the characters of all messages once, not each message", () => {
    // 10 + 10 + 2 = 22 chars → 5; per-message rounding would give 2 + 2 + 0 = 4 (floor) or 3 + 3 + 1 = 7 (ceil).
    const history = [user("a".repeat(10)), user("b".repeat(10)), user("cc")];
    expect(manager().estimateTokens(history)).toBe(5);
  });

  it("is 0 for an empty history and exact for multiples of 4", () => {
    expect(manager().estimateTokens([])).toBe(0);
    expect(manager().estimateTokens([user("a".repeat(40)), user("b".repeat(40))])).toBe(20);
  });

  it("stays floor(total / 4) as a history grows and after an unrelated history", () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 9 }), { maxLength: 12 }), (contents) => {
        const context = manager();
        const history: Message[] = [];
        for (const content of contents) {
          history.push(user(content));
          const chars = history.reduce((sum, message) => sum + message.content.length, 0);
          expect(context.estimateTokens([...history])).toBe(Math.floor(chars / 4));
        }
        const reversed = [...history].reverse();
        const chars = reversed.reduce((sum, message) => sum + message.content.length, 0);
        expect(context.estimateTokens(reversed)).toBe(Math.floor(chars / 4));
      }),
      { numRuns: 200 },
    );
  });

  it("sums a custom estimator's per-message figures as they are", () => {
    const context = new ContextManager({
      strategy: new NoCompact(),
      budgetTokens: 1000,
      estimateTokens: (message) => estimateTokensByChars(message) + MESSAGE_OVERHEAD_TOKENS,
    });
    expect(context.estimateTokens([user("a".repeat(10)), user("b".repeat(10))])).toBe(2 + 4 + 2 + 4);
  });
});

describe("charRatioEstimator", () => {
  it("charges chars / ratio rounded down, tool calls included, and at ratio 4 equals the default", () => {
    expect(charRatioEstimator(2.4)(user("123456"))).toBe(2);
    expect(charRatioEstimator(2.4).charsPerToken).toBe(2.4);
    const [call] = executedBatch(0, ["a"]);
    expect(charRatioEstimator(4)(call!)).toBe(estimateTokensByChars(call!));
    expect(charRatioEstimator(2)(call!)).toBeGreaterThan(estimateTokensByChars(call!));
  });

  it("divides a history's total characters once by the ratio", () => {
    const context = new ContextManager({
      strategy: new NoCompact(),
      budgetTokens: 1000,
      estimateTokens: charRatioEstimator(2.5),
    });
    // 3 + 3 = 6 chars → 2 (per message: 1 + 1).
    expect(context.estimateTokens([user("abc"), user("def")])).toBe(2);
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
