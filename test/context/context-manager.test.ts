import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { CompactOptions, CompactStrategy } from "../../src/context/compact-strategy.ts";
import { type CompactEvent, ContextManager, type ThresholdEvent } from "../../src/context/context-manager.ts";
import { NoCompact } from "../../src/context/no-compact.ts";
import { TieredCompact } from "../../src/context/tiered-compact.ts";
import { createMessage, type Message, MessageRole, MessageType } from "../../src/core/messages.ts";
import { deepFreeze, executedBatch, systemPrompt, userInput } from "./history-fixtures.ts";

/** Every message costs 10 tokens, so budgets read as message counts × 10. */
const tenEach = () => 10;

function recordingStrategy(result: (messages: readonly Message[]) => { messages: Message[]; phase: number }) {
  const calls: { messages: readonly Message[]; triggerTokens: number; opts: CompactOptions | undefined }[] =
    [];
  const strategy: CompactStrategy = {
    compact(messages, triggerTokens, opts) {
      calls.push({ messages, triggerTokens, opts });
      return result(messages);
    },
  };
  return { calls, strategy };
}

const history = (count: number): Message[] =>
  deepFreeze(
    Array.from({ length: count }, (_, index) =>
      createMessage(MessageRole.ASSISTANT, `note ${index}`, {
        type: MessageType.REASONING,
        stepIndex: index,
      }),
    ),
  );

describe("ContextManager.maybeCompact", () => {
  it("returns the same array and leaves the strategy alone at or under the threshold", () => {
    const { calls, strategy } = recordingStrategy(() => ({ messages: [], phase: 1 }));
    const events: CompactEvent[] = [];
    const context = new ContextManager({
      strategy,
      budgetTokens: 100,
      estimateTokens: tenEach,
      onCompact: (event) => events.push(event),
    });
    const messages = history(7); // 70 <= 75
    expect(context.maybeCompact(messages, 3)).toBe(messages);
    expect(calls).toEqual([]);
    expect(events).toEqual([]);
  });

  it("compacts over budget × threshold, asks for budget × target, forwards the step hint and reports the event", () => {
    const { calls, strategy } = recordingStrategy((messages) => ({ messages: messages.slice(5), phase: 2 }));
    const events: CompactEvent[] = [];
    const context = new ContextManager({
      strategy,
      budgetTokens: 100,
      compactThreshold: 0.5,
      compactTarget: 0.4,
      estimateTokens: tenEach,
      onCompact: (event) => events.push(event),
    });
    const messages = history(8);
    const result = context.maybeCompact(messages, 4, "[Steps completed: a]");
    expect(result).toEqual(messages.slice(5));
    expect(calls).toHaveLength(1);
    expect(calls[0]!.triggerTokens).toBe(40);
    expect(calls[0]!.opts?.stepHint).toBe("[Steps completed: a]");
    expect(calls[0]!.opts?.estimateTokens?.(messages)).toBe(80);
    expect(events).toEqual([
      {
        stepIndex: 4,
        tokensBefore: 80,
        tokensAfter: 30,
        budgetTokens: 100,
        messagesBefore: 8,
        messagesAfter: 3,
        phaseReached: 2,
      },
    ]);
  });

  it("returns the input and stays silent when the strategy changes nothing", () => {
    const events: CompactEvent[] = [];
    const context = new ContextManager({
      strategy: new NoCompact(),
      budgetTokens: 10,
      estimateTokens: tenEach,
      onCompact: (event) => events.push(event),
    });
    const messages = history(5);
    expect(context.maybeCompact(messages)).toBe(messages);
    expect(events).toEqual([]);
  });

  it("runs a real TieredCompact end to end without mutating the history", () => {
    const events: CompactEvent[] = [];
    const context = new ContextManager({
      strategy: new TieredCompact(),
      budgetTokens: 1000,
      onCompact: (event) => events.push(event),
    });
    const messages = deepFreeze([
      systemPrompt(),
      userInput(),
      ...executedBatch(0, ["x".repeat(4000)]),
      ...executedBatch(1, ["y"]),
      ...executedBatch(2, ["z"]),
    ]);
    const result = context.maybeCompact(messages, 3, "[Steps completed: fetch_0]");
    expect(result).not.toBe(messages);
    expect(events[0]).toMatchObject({ stepIndex: 3, phaseReached: 1, budgetTokens: 1000 });
    expect(events[0]!.tokensAfter).toBeLessThanOrEqual(750);
    expect(events[0]!.tokensBefore).toBe(context.estimateTokens(messages));
  });
});

describe("ContextManager threshold warnings", () => {
  function warningsFor(warnAt: number[]) {
    const events: ThresholdEvent[] = [];
    const context = new ContextManager({
      strategy: new NoCompact(),
      budgetTokens: 100,
      estimateTokens: tenEach,
      warnAt,
      onThreshold: (event) => events.push(event),
    });
    return { context, events };
  }

  it("fires each fraction once, when usage first reaches it", () => {
    const { context, events } = warningsFor([0.5, 0.8]);
    context.maybeCompact(history(4), 0);
    expect(events).toEqual([]);
    context.maybeCompact(history(5), 1);
    context.maybeCompact(history(6), 2);
    context.maybeCompact(history(9), 3);
    context.maybeCompact(history(9), 4);
    expect(events).toEqual([
      { fraction: 0.5, tokens: 50, budgetTokens: 100, stepIndex: 1 },
      { fraction: 0.8, tokens: 90, budgetTokens: 100, stepIndex: 3 },
    ]);
  });

  it("fires every fraction crossed at once, ascending, and again after resetWarnings", () => {
    const { context, events } = warningsFor([0.9, 0.5]);
    context.maybeCompact(history(10));
    expect(events.map((event) => event.fraction)).toEqual([0.5, 0.9]);
    context.maybeCompact(history(10));
    expect(events).toHaveLength(2);
    context.resetWarnings();
    context.maybeCompact(history(6));
    expect(events.map((event) => event.fraction)).toEqual([0.5, 0.9, 0.5]);
  });
});

describe("ContextManager token estimation", () => {
  it("uses the pluggable estimator for the threshold decision", () => {
    const { calls, strategy } = recordingStrategy((messages) => ({ messages: [...messages], phase: 0 }));
    const messages = history(3);
    new ContextManager({ strategy, budgetTokens: 100 }).maybeCompact(messages);
    expect(calls).toHaveLength(0);
    new ContextManager({ strategy, budgetTokens: 100, estimateTokens: () => 30 }).maybeCompact(messages);
    expect(calls).toHaveLength(1);
  });

  it("estimates only the appended message of a 1000-message history", () => {
    let estimated = 0;
    const context = new ContextManager({
      strategy: new NoCompact(),
      budgetTokens: 1_000_000,
      estimateTokens: () => {
        estimated++;
        return 10;
      },
    });
    const messages = history(1000);
    expect(context.maybeCompact(messages, 0)).toBe(messages);
    expect(estimated).toBe(1000);
    const next = [...messages, ...history(1)];
    expect(context.estimateTokens(next)).toBe(10_010);
    context.maybeCompact(next, 1);
    expect(estimated).toBe(1001);
  });

  it("keeps counting incrementally after a compaction", () => {
    let estimated = 0;
    const context = new ContextManager({
      strategy: new TieredCompact({ keepRecent: 1 }),
      budgetTokens: 200,
      estimateTokens: (message) => {
        estimated++;
        return Math.ceil(message.content.length / 4);
      },
    });
    const messages = deepFreeze([
      systemPrompt(),
      userInput(),
      ...executedBatch(0, ["x".repeat(2000)]),
      ...executedBatch(1, ["y"]),
    ]);
    const compacted = context.maybeCompact(messages, 2);
    expect(compacted).not.toBe(messages);
    const before = estimated;
    context.maybeCompact([...compacted, ...executedBatch(2, ["z"])], 3);
    expect(estimated - before).toBe(2);
  });
});

describe("ContextManager as the loop's dependency", () => {
  it("fits the loop's maybeCompact(messages: Message[]) => Message[] shape", () => {
    const dependency: {
      maybeCompact(messages: Message[], stepIndex?: number, stepHint?: string): Message[];
    } = new ContextManager({ strategy: new NoCompact(), budgetTokens: 100 });
    const messages = history(2);
    expect(dependency.maybeCompact(messages, 0, "")).toBe(messages);
  });
});

describe("ContextManager.forRun", () => {
  it("keeps the settings, strategy, estimator and tools, with a backend count and warnings of its own", () => {
    const tools = [{ name: "lookup", description: "Look up", parameters: z.object({}) }];
    const shared = new ContextManager({
      strategy: new NoCompact(),
      budgetTokens: 100,
      compactThreshold: 0.9,
      compactTarget: 0.4,
      warnAt: [0.5],
      estimateTokens: tenEach,
      tools,
    });
    const first = shared.forRun();
    const second = shared.forRun();
    expect(first).not.toBe(shared);
    expect(first).toMatchObject({
      budgetTokens: 100,
      compactThreshold: 0.9,
      compactTarget: 0.4,
      warnAt: [0.5],
    });
    expect(first.strategy).toBe(shared.strategy);
    expect(first.toolTokens).toBe(10);
    // The backend counted the first run's history: the second run's count is not scaled by it.
    const messages = history(2);
    first.observeUsage(messages, 90);
    expect(first.countTokens(messages)).toBe(90);
    expect(second.countTokens(messages)).toBe(30);
    expect(shared.countTokens(messages)).toBe(30);
    // The first run crossing 50 % does not use up the second run's warning.
    first.maybeCompact(history(6));
    expect(first.takeWarnings()).toHaveLength(1);
    second.maybeCompact(history(6));
    expect(second.takeWarnings()).toHaveLength(1);
    expect(shared.takeWarnings()).toEqual([]);
  });

  it("calls the manager's own hooks, then the run's, with the same event", () => {
    const heard: [string, CompactEvent | ThresholdEvent][] = [];
    const shared = new ContextManager({
      strategy: recordingStrategy((messages) => ({ messages: messages.slice(-1), phase: 1 })).strategy,
      budgetTokens: 50,
      estimateTokens: tenEach,
      warnAt: [0.5],
      onCompact: (event) => heard.push(["manager compact", event]),
      onThreshold: (event) => heard.push(["manager threshold", event]),
    });
    const run = shared.forRun({
      onCompact: (event) => heard.push(["run compact", event]),
      onThreshold: (event) => heard.push(["run threshold", event]),
    });
    run.maybeCompact(history(5), 3);
    expect(heard.map(([who]) => who)).toEqual([
      "manager threshold",
      "run threshold",
      "manager compact",
      "run compact",
    ]);
    expect(heard[0]?.[1]).toBe(heard[1]?.[1]);
    expect(heard[2]?.[1]).toBe(heard[3]?.[1]);
    expect(heard[2]?.[1]).toMatchObject({ stepIndex: 3, tokensBefore: 50, messagesAfter: 1 });
  });
});

describe("ContextManager options", () => {
  const strategy = new NoCompact();

  it.each([
    [{ budgetTokens: 0 }, /budgetTokens/],
    [{ budgetTokens: 1.5 }, /budgetTokens/],
    [{ budgetTokens: Number.NaN }, /budgetTokens/],
    [{ budgetTokens: 100, compactThreshold: 0 }, /compactThreshold/],
    [{ budgetTokens: 100, compactThreshold: 1.01 }, /compactThreshold/],
    [{ budgetTokens: 100, warnAt: [0.5, 1.2] }, /warnAt/],
    [{ budgetTokens: 100, warnAt: [0] }, /warnAt/],
    [{ budgetTokens: 100, compactTarget: 0 }, /compactTarget/],
    [{ budgetTokens: 100, compactTarget: 0.8 }, /compactTarget must be <= compactThreshold \(0\.75\)/],
    [{ budgetTokens: 100, compactThreshold: 0.5, compactTarget: 0.6 }, /compactTarget/],
  ])("rejects %o with a RangeError naming the option", (options, name) => {
    expect(() => new ContextManager({ strategy, ...options })).toThrow(RangeError);
    expect(() => new ContextManager({ strategy, ...options })).toThrow(name);
  });

  it("accepts a threshold of exactly 1 and exposes the trigger", () => {
    expect(new ContextManager({ strategy, budgetTokens: 8192, compactThreshold: 1 }).triggerTokens).toBe(
      8192,
    );
    expect(new ContextManager({ strategy, budgetTokens: 8192 }).triggerTokens).toBe(6144);
    expect(new ContextManager({ strategy, budgetTokens: 8192 }).targetTokens).toBe(4096);
    expect(
      new ContextManager({ strategy, budgetTokens: 900, compactThreshold: 0.6 }).targetTokens,
    ).toBeCloseTo(360, 9);
    expect(
      new ContextManager({ strategy, budgetTokens: 100, compactThreshold: 0.5, compactTarget: 0.5 })
        .targetTokens,
    ).toBe(50);
  });

  it("rejects a strategy without compact()", () => {
    expect(() => new ContextManager({ strategy: {} as CompactStrategy, budgetTokens: 10 })).toThrow(
      TypeError,
    );
  });
});
