import { describe, expect, it } from "vitest";
import { type CompactEvent, ContextManager } from "../../src/context/context-manager.ts";
import { NoCompact } from "../../src/context/no-compact.ts";
import { SlidingWindowCompact } from "../../src/context/sliding-window-compact.ts";
import { type Message, MessageRole, MessageType } from "../../src/core/messages.ts";
import {
  blockedBatch,
  byType,
  deepFreeze,
  executedBatch,
  pairingProblems,
  reasoning,
  retryNudge,
  systemPrompt,
  textResponse,
  userInput,
} from "./history-fixtures.ts";

const big = (label: string) => `${label}:${"row ".repeat(200)}`;

function buildHistory(): Message[] {
  return deepFreeze([
    systemPrompt(),
    userInput(),
    reasoning(0, "Start with the catalogue."),
    ...executedBatch(0, [big("catalogue")]),
    textResponse(1, "Done?"),
    retryNudge(1),
    ...blockedBatch(2, [MessageType.STEP_NUDGE]),
    ...executedBatch(3, [big("history")]),
    reasoning(4, "Compare."),
    ...executedBatch(4, [big("quotes"), big("stock")]),
  ]);
}

describe("SlidingWindowCompact", () => {
  it("keeps the system prompt, the first user input and the last N iterations only", () => {
    const history = buildHistory();
    const result = new SlidingWindowCompact({ keepRecent: 2 }).compact(history, 0);
    expect(result.phase).toBe(1);
    expect(result.messages).toEqual([
      history[0],
      history[1],
      ...history.filter((message) => (message.metadata.stepIndex ?? -1) >= 3),
    ]);
    expect(pairingProblems(result.messages)).toEqual([]);
  });

  it("applies whenever it is called, also under the trigger: whether to compact is the caller's (the seeds' rule)", () => {
    const history = buildHistory();
    const strategy = new SlidingWindowCompact({ keepRecent: 1 });
    const underTrigger = strategy.compact(history, 1e9);
    expect(underTrigger.phase).toBe(1);
    expect(underTrigger).toEqual(strategy.compact(history, 0));
    expect(underTrigger.messages.length).toBeLessThan(history.length);
  });

  it("reports phase 1 over the trigger, as the seeds ask of a strategy without phases, even with nothing to drop", () => {
    const history = buildHistory();
    const all = new SlidingWindowCompact({ keepRecent: 5 }).compact(history, 0);
    expect(all).toEqual({ messages: history, phase: 1 });
    expect(all.messages).not.toBe(history);
    expect(new SlidingWindowCompact({ keepRecent: 1 }).compact(history, 0).phase).toBe(1);
  });

  it("reaches the onCompact event as phaseReached 1", () => {
    const events: CompactEvent[] = [];
    const history = buildHistory();
    const context = new ContextManager({
      strategy: new SlidingWindowCompact({ keepRecent: 1 }),
      budgetTokens: 100,
      onCompact: (event) => events.push(event),
    });
    const compacted = context.maybeCompact(history, 7);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ stepIndex: 7, phaseReached: 1, messagesBefore: history.length });
    expect(events[0]!.messagesAfter).toBe(compacted.length);
    expect(compacted.length).toBeLessThan(history.length);
  });

  it("keeps a tool call and its results together across the window's edge", () => {
    const [call, first, second] = executedBatch(0, ["a", "b"]);
    const lateResult = { ...second!, metadata: { ...second!.metadata, stepIndex: 1 } };
    const history = deepFreeze([systemPrompt(), userInput(), reasoning(0, "r"), call!, first!, lateResult]);
    const result = new SlidingWindowCompact({ keepRecent: 1 }).compact(history, 0);
    expect(result.messages).toEqual([history[0], history[1], call, first, lateResult]);
  });

  it("carries the step hint in one user summary after the first user input", () => {
    const result = new SlidingWindowCompact({ keepRecent: 1 }).compact(buildHistory(), 0, {
      stepHint: "[Steps completed: fetch_0]",
    });
    expect(result.messages[2]).toMatchObject({
      role: MessageRole.USER,
      content: "[Steps completed: fetch_0]",
      metadata: { type: MessageType.SUMMARY },
    });
    const grown = deepFreeze([...result.messages, ...executedBatch(5, [big("more")])]);
    const again = new SlidingWindowCompact({ keepRecent: 1 }).compact(grown, 0, {
      stepHint: "[Steps completed: fetch_0, fetch_1]",
    });
    expect(byType(again.messages, MessageType.SUMMARY).map((message) => message.content)).toEqual([
      "[Steps completed: fetch_0, fetch_1]",
    ]);
  });

  it("never mutates its (deep-frozen) input", () => {
    const history = buildHistory();
    const snapshot = structuredClone(history);
    new SlidingWindowCompact({ keepRecent: 0 }).compact(history, 0, { stepHint: "[Steps completed: x]" });
    expect(history).toEqual(snapshot);
  });

  it("rejects a bad keepRecent, naming it", () => {
    expect(() => new SlidingWindowCompact({ keepRecent: -2 })).toThrow(/keepRecent/);
    expect(() => new SlidingWindowCompact({ keepRecent: Number.NaN })).toThrow(RangeError);
  });
});

describe("NoCompact", () => {
  it("passes the history through as a copy with phase 0", () => {
    const history = buildHistory();
    const result = new NoCompact().compact(history);
    expect(result).toEqual({ messages: history, phase: 0 });
    expect(result.messages).not.toBe(history);
  });
});
