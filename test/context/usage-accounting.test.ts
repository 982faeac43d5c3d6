import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { CompactStrategy } from "../../src/context/compact-strategy.ts";
import { type CompactEvent, ContextManager } from "../../src/context/context-manager.ts";
import { NoCompact } from "../../src/context/no-compact.ts";
import { TieredCompact } from "../../src/context/tiered-compact.ts";
import { estimateTokensByChars } from "../../src/context/token-estimator.ts";
import { appendMessages } from "../../src/core/history.ts";
import { type Message, MessageType } from "../../src/core/messages.ts";
import { type ToolSpec, toOpenAITool } from "../../src/core/tools.ts";
import {
  byType,
  deepFreeze,
  executedBatch,
  newestSteps,
  pairingProblems,
  reasoning,
  systemPrompt,
  userInput,
} from "./history-fixtures.ts";

const tenEach = () => 10;
const start = (): Message[] => deepFreeze([systemPrompt(), userInput()]);

/** A strategy that records what it was asked and drops everything but the first message. */
function keepFirst() {
  const targets: number[] = [];
  const strategy: CompactStrategy = {
    compact(messages, triggerTokens) {
      targets.push(triggerTokens);
      return { messages: messages.slice(0, 1), phase: 1 };
    },
  };
  return { targets, strategy };
}

const weatherTool: ToolSpec = {
  name: "get_weather",
  description: "Current weather for a city.",
  parameters: z.object({ city: z.string() }),
};

describe("ContextManager token accounting from the backend", () => {
  it("counts the tools list with the estimate before the first answer", () => {
    const context = new ContextManager({
      strategy: new NoCompact(),
      budgetTokens: 1000,
      tools: [weatherTool],
    });
    const toolJson = JSON.stringify([toOpenAITool(weatherTool)]);
    const expectedTools = Math.floor(toolJson.length / 4);
    expect(context.toolTokens).toBe(expectedTools);
    const messages = start();
    expect(context.countTokens(messages)).toBe(context.estimateTokens(messages) + expectedTools);
    context.setTools([]);
    expect(context.countTokens(messages)).toBe(context.estimateTokens(messages));
  });

  it("counts the observed prompt tokens plus the estimate of what was appended since", () => {
    const context = new ContextManager({
      strategy: new NoCompact(),
      budgetTokens: 10_000,
      estimateTokens: tenEach,
    });
    const sent = start();
    context.observeUsage(sent, 731);
    expect(context.countTokens(sent)).toBe(731);
    // The loop's way of growing a history, and a plain copy with the same messages in front.
    const grown = appendMessages(sent, executedBatch(0, ["result"]));
    expect(context.countTokens(grown)).toBe(731 + 20);
    expect(context.countTokens([...sent, reasoning(0, "thinking")])).toBe(731 + 10);
  });

  it("scales the estimate of a history it has not counted by the last comparison, never below it", () => {
    const context = new ContextManager({
      strategy: new NoCompact(),
      budgetTokens: 10_000,
      estimateTokens: tenEach,
    });
    const sent = deepFreeze([...start(), reasoning(0, "a"), reasoning(0, "b")]); // estimate 40
    context.observeUsage(sent, 100); // the backend says 2.5× (60 more)
    const edited = [sent[0]!, sent[1]!, reasoning(0, "c")]; // estimate 30, not an extension
    // ratio: 75, offset: 90 → the larger.
    expect(context.countTokens(edited)).toBe(90);
    context.observeUsage(sent, 20); // the estimate was twice the real count
    // ratio: 15, offset: 10 → 15.
    expect(context.countTokens(edited)).toBe(15);
  });

  it("compacts on the backend's count when the estimate is under the threshold", () => {
    const { targets, strategy } = keepFirst();
    const events: CompactEvent[] = [];
    const context = new ContextManager({
      strategy,
      budgetTokens: 1000,
      estimateTokens: tenEach,
      onCompact: (event) => events.push(event),
    });
    const sent = start(); // estimate 20, far under 750
    expect(context.maybeCompact(sent)).toBe(sent);
    context.observeUsage(sent, 760);
    const next = appendMessages(sent, [reasoning(0, "x")]);
    const result = context.maybeCompact(next, 1);
    expect(result).toEqual([sent[0]]);
    expect(targets).toEqual([500]);
    expect(events[0]).toMatchObject({ tokensBefore: 770, stepIndex: 1 });
  });

  it("does not compact when the backend's count is under the threshold though the estimate is over", () => {
    const { targets, strategy } = keepFirst();
    const context = new ContextManager({ strategy, budgetTokens: 100, estimateTokens: () => 50 });
    const sent = start(); // estimate 100 > 75
    context.observeUsage(sent, 40);
    expect(context.maybeCompact(sent)).toBe(sent);
    expect(targets).toEqual([]);
  });

  it("gives the strategy an estimator calibrated to the backend's count", () => {
    const seen: number[] = [];
    const strategy: CompactStrategy = {
      compact(messages, _target, opts) {
        seen.push(opts?.estimateTokens?.(messages) ?? -1, opts?.estimateTokens?.(messages.slice(0, 1)) ?? -1);
        return { messages: messages.slice(0, 1), phase: 1 };
      },
    };
    const context = new ContextManager({ strategy, budgetTokens: 100, estimateTokens: tenEach });
    const sent = start();
    context.observeUsage(sent, 80); // estimate 20: offset 60
    context.maybeCompact(sent);
    expect(seen).toEqual([80, 70]);
  });

  it.each([-1, 1.5, Number.NaN])("rejects observed prompt tokens of %s with a RangeError", (tokens) => {
    const context = new ContextManager({ strategy: new NoCompact(), budgetTokens: 100 });
    expect(() => context.observeUsage(start(), tokens)).toThrow(/promptTokens must be an integer >= 0/);
  });
});

/**
 * A long run through the real TieredCompact: each iteration appends a reasoning message and an
 * executed batch with a large result, as the loop does; the backend's count is the estimate.
 */
function longRun(compactTarget: number | undefined, iterations = 90) {
  const events: CompactEvent[] = [];
  const context = new ContextManager({
    strategy: new TieredCompact({ keepRecent: 2 }),
    budgetTokens: 8000,
    ...(compactTarget !== undefined && { compactTarget }),
    onCompact: (event) => events.push(event),
  });
  let messages: Message[] = start();
  const snapshots: { before: readonly Message[]; after: readonly Message[] }[] = [];
  for (let step = 0; step < iterations; step++) {
    const compacted = context.maybeCompact(messages, step, `[Steps completed: ${step}]`);
    if (compacted !== messages) snapshots.push({ before: messages, after: compacted });
    messages = compacted as Message[];
    context.observeUsage(
      messages,
      messages.reduce((sum, message) => sum + estimateTokensByChars(message), 0),
    );
    messages = appendMessages(messages, [
      reasoning(step, `Step ${step}: looking up the next supplier.`),
      ...executedBatch(step, [`${"price row ".repeat(40)}#${step}`, "ok"]),
    ]);
  }
  return { events, snapshots, context };
}

describe("ContextManager hysteresis (compactTarget)", () => {
  it("compacts a long run fewer times with a target under the threshold than at it", () => {
    const without = longRun(0.75);
    const withHysteresis = longRun(undefined);
    expect(without.events.length).toBeGreaterThan(3);
    expect(withHysteresis.events.length).toBeGreaterThan(0);
    expect(withHysteresis.events.length * 2).toBeLessThan(without.events.length);
    // The first compaction reaches the target; later ones get as close as the never-cut floor lets
    // them (executed tool calls and the newest iterations stay), and the run stays under budget.
    expect(withHysteresis.events[0]!.tokensAfter).toBeLessThanOrEqual(withHysteresis.context.targetTokens);
    expect(without.events[0]!.tokensAfter).toBeGreaterThan(withHysteresis.context.targetTokens);
    for (const event of [...without.events, ...withHysteresis.events]) {
      expect(event.tokensAfter).toBeLessThan(event.tokensBefore);
      expect(event.tokensBefore).toBeLessThanOrEqual(8000);
    }
  });

  it("never cuts what must not be cut while compacting down to the target", () => {
    const { snapshots } = longRun(undefined);
    expect(snapshots.length).toBeGreaterThan(0);
    for (const { before, after } of snapshots) {
      expect(pairingProblems(after)).toEqual([]);
      expect(after[0]).toBe(before[0]); // the system prompt
      expect(byType(after, MessageType.USER_INPUT)).toEqual(byType(before, MessageType.USER_INPUT));
      // Every tool-call message of an executed batch stays, in full.
      for (const call of byType(before, MessageType.TOOL_CALL)) expect(after).toContain(call);
      // The two newest iterations are kept whole.
      const recent = newestSteps(before, 2);
      const kept = before.filter((message) => recent.has(message.metadata.stepIndex ?? -1));
      for (const message of kept) expect(after).toContain(message);
    }
  });

  it("leaves the prompt's prefix alone between two compactions", () => {
    const { snapshots } = longRun(undefined);
    for (let index = 1; index < snapshots.length; index++) {
      const previous = snapshots[index - 1]!.after;
      const grown = snapshots[index]!.before;
      expect(grown.slice(0, previous.length)).toEqual(previous);
    }
    expect(snapshots.length).toBeGreaterThan(1);
  });
});
