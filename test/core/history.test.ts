import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { TokenCounter } from "../../src/context/token-counter.ts";
import { appendMessages, extendsHistory, hasReasoning } from "../../src/core/history.ts";
import { HistorySerializer } from "../../src/core/history-serializer.ts";
import {
  createMessage,
  foldReasoning,
  type Message,
  MessageRole,
  MessageType,
  toApiMessage,
} from "../../src/core/messages.ts";

let counter = 0;
function message(type: MessageType = MessageType.TOOL_RESULT): Message {
  counter += 1;
  if (type === MessageType.TOOL_CALL) {
    return createMessage(
      MessageRole.ASSISTANT,
      "",
      { type },
      { toolCalls: [{ name: "lookup", args: { n: counter }, callId: `call_${counter}` }] },
    );
  }
  const role = type === MessageType.REASONING ? MessageRole.ASSISTANT : MessageRole.USER;
  return createMessage(role, `message ${counter}`, { type });
}

function isPrefix(prefix: readonly Message[], history: readonly Message[]): boolean {
  return prefix.length <= history.length && prefix.every((item, index) => history[index] === item);
}

describe("appendMessages", () => {
  it("returns a new frozen array and leaves its input alone", () => {
    const base = [message(), message()];
    const added = [message()];
    const next = appendMessages(base, added);
    expect(next).toEqual([...base, ...added]);
    expect(Object.isFrozen(next)).toBe(true);
    expect(Object.isFrozen(base)).toBe(false);
    expect(base).toHaveLength(2);
    expect(() => (next as Message[]).push(message())).toThrow(TypeError);
  });

  it("makes each grown history known to extend every frozen history it grew from", () => {
    const start = Object.freeze([message()]);
    const first = appendMessages(start, [message()]);
    const second = appendMessages(first, [message(), message()]);
    const third = appendMessages(second, []);
    for (const [history, prefix] of [
      [first, start],
      [second, start],
      [second, first],
      [third, first],
      [third, third],
    ] as const) {
      expect(extendsHistory(history, prefix)).toBe(true);
    }
    // Never the other way round.
    expect(extendsHistory(start, first)).toBe(false);
    expect(extendsHistory(first, second)).toBe(false);
  });

  it("knows nothing about an unfrozen history, even the same array", () => {
    const start = [message()];
    const next = appendMessages(start, [message()]);
    expect(extendsHistory(next, start)).toBe(false);
    expect(extendsHistory(start, start)).toBe(false);
    // The frozen result starts a line of its own.
    expect(extendsHistory(appendMessages(next, [message()]), next)).toBe(true);
  });

  it("does not claim a branch off an older history extends the newer one", () => {
    const start = Object.freeze([message()]);
    const first = appendMessages(start, [message()]);
    appendMessages(first, [message()]);
    const branch = appendMessages(first, [message(), message()]);
    const onBranch = appendMessages(branch, [message()]);
    expect(extendsHistory(onBranch, branch)).toBe(true);
    expect(extendsHistory(branch, first)).toBe(false);
    expect(extendsHistory(onBranch, start)).toBe(false);
  });

  it("claims only real prefixes and tells reasoning apart, for any sequence of appends and branches", () => {
    const operation = fc.record({
      from: fc.nat(),
      added: fc.array(
        fc.constantFrom(MessageType.TOOL_RESULT, MessageType.TOOL_CALL, MessageType.REASONING),
        { maxLength: 3 },
      ),
      freezeFirst: fc.boolean(),
    });
    fc.assert(
      fc.property(
        fc.array(operation, { minLength: 1, maxLength: 30 }),
        fc.boolean(),
        (operations, frozen) => {
          const start = [message(MessageType.SYSTEM_PROMPT), message(MessageType.USER_INPUT)];
          const histories: (readonly Message[])[] = [frozen ? Object.freeze(start) : start];
          for (const { from, added, freezeFirst } of operations) {
            const base = histories[from % histories.length] as readonly Message[];
            if (freezeFirst) Object.freeze(base);
            histories.push(
              appendMessages(
                base,
                added.map((type) => message(type)),
              ),
            );
          }
          for (const history of histories) {
            expect(hasReasoning(history)).toBe(
              history.some((item) => item.metadata.type === MessageType.REASONING),
            );
            for (const prefix of histories) {
              if (extendsHistory(history, prefix)) expect(isPrefix(prefix, history)).toBe(true);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("histories grown by appendMessages", () => {
  it("serialize as a fresh serialization of the same messages would", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            from: fc.nat(),
            added: fc.array(
              fc.constantFrom(MessageType.TOOL_RESULT, MessageType.TOOL_CALL, MessageType.REASONING),
              { maxLength: 3 },
            ),
          }),
          { minLength: 1, maxLength: 20 },
        ),
        (operations) => {
          const serializer = new HistorySerializer("openai");
          const histories: (readonly Message[])[] = [
            Object.freeze([message(MessageType.SYSTEM_PROMPT), message(MessageType.USER_INPUT)]),
          ];
          for (const { from, added } of operations) {
            // Mostly grow the newest history, as a loop does; sometimes go back to an older one.
            const base = histories[from % 4 === 0 ? from % histories.length : histories.length - 1];
            const next = appendMessages(
              base as readonly Message[],
              added.map((type) => message(type)),
            );
            histories.push(next);
            expect(serializer.serialize(next)).toEqual(
              foldReasoning(next).map((item) => toApiMessage(item, "openai")),
            );
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it("are not trusted by the token counter when they were edited before being frozen", () => {
    const counter = new TokenCounter((item) => item.content.length);
    const history = [message(), message()];
    counter.count(history);
    // Edited in place after it was counted, then frozen and grown: the counter must recount.
    history[1] = createMessage(MessageRole.USER, "a much longer message than before", {
      type: MessageType.TOOL_RESULT,
    });
    Object.freeze(history);
    const grown = appendMessages(history, [message()]);
    const fresh = new TokenCounter((item) => item.content.length);
    expect(counter.count(grown)).toBe(fresh.count(grown));
  });

  it("are counted by the token counter estimating only the appended messages", () => {
    const seen: Message[] = [];
    const counter = new TokenCounter((item) => {
      seen.push(item);
      return 10;
    });
    let history = Object.freeze([message(), message()]) as readonly Message[];
    expect(counter.count(history)).toBe(20);
    for (let round = 0; round < 5; round++) {
      history = appendMessages(history, [message(), message()]);
      expect(counter.count(history)).toBe(20 + 20 * (round + 1));
    }
    expect(seen).toHaveLength(12);
  });
});
