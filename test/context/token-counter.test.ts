import { describe, expect, it } from "vitest";
import { TokenCounter } from "../../src/context/token-counter.ts";
import { createMessage, type Message, MessageRole, MessageType } from "../../src/core/messages.ts";

function note(index: number): Message {
  return createMessage(MessageRole.ASSISTANT, `note ${index}`, {
    type: MessageType.REASONING,
    stepIndex: index,
  });
}

function countingEstimator() {
  const seen: Message[] = [];
  const estimator = (message: Message) => {
    seen.push(message);
    return 10;
  };
  return { seen, estimator };
}

describe("TokenCounter", () => {
  it("estimates only the appended message when a new array extends the last one", () => {
    const { seen, estimator } = countingEstimator();
    const counter = new TokenCounter(estimator);
    const history = Array.from({ length: 1000 }, (_, index) => note(index));
    expect(counter.count(history)).toBe(10_000);
    expect(seen).toHaveLength(1000);
    const appended = note(1000);
    expect(counter.count([...history, appended])).toBe(10_010);
    expect(seen).toHaveLength(1001);
    expect(seen.at(-1)).toBe(appended);
  });

  it("follows an array grown in place by push", () => {
    const { seen, estimator } = countingEstimator();
    const counter = new TokenCounter(estimator);
    const history = [note(0), note(1)];
    counter.count(history);
    history.push(note(2));
    expect(counter.count(history)).toBe(30);
    expect(seen).toHaveLength(3);
  });

  it("sums cached per-message estimates for an unrelated array", () => {
    const { seen, estimator } = countingEstimator();
    const counter = new TokenCounter(estimator);
    const history = [note(0), note(1), note(2), note(3)];
    counter.count(history);
    const reordered = [history[3]!, history[1]!];
    expect(counter.count(reordered)).toBe(20);
    expect(counter.count([history[0]!])).toBe(10);
    expect(seen).toHaveLength(4);
  });

  it("does not trust the running total when the history changed under it", () => {
    const counter = new TokenCounter((message) => message.content.length);
    const history = [note(0), note(1), note(2)];
    counter.count(history);
    const edited = [
      createMessage(MessageRole.USER, "x", { type: MessageType.USER_INPUT }),
      ...history.slice(1),
    ];
    expect(counter.count(edited)).toBe(1 + 6 + 6);
    // Same length, same first and last message, different middle: a compacted copy looks like this.
    const middle = [
      history[0]!,
      createMessage(MessageRole.TOOL, "", { type: MessageType.TOOL_RESULT }),
      history[2]!,
    ];
    counter.count(history);
    expect(counter.count(middle)).toBe(6 + 0 + 6);
    // The same array edited in place.
    counter.count(history);
    history[1] = createMessage(MessageRole.TOOL, "abc", { type: MessageType.TOOL_RESULT });
    expect(counter.count(history)).toBe(6 + 3 + 6);
  });

  it("rejects an estimator that returns NaN or a negative number", () => {
    expect(() => new TokenCounter(() => Number.NaN).count([note(0)])).toThrow(RangeError);
    expect(() => new TokenCounter(() => -1).count([note(0)])).toThrow(/estimator/);
  });
});
