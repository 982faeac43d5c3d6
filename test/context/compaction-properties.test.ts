import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { CompactStrategy } from "../../src/context/compact-strategy.ts";
import { type CompactEvent, ContextManager } from "../../src/context/context-manager.ts";
import { SlidingWindowCompact } from "../../src/context/sliding-window-compact.ts";
import { TieredCompact } from "../../src/context/tiered-compact.ts";
import { TokenCounter } from "../../src/context/token-counter.ts";
import { estimateTokensByChars } from "../../src/context/token-estimator.ts";
import { type Message, MessageRole, MessageType } from "../../src/core/messages.ts";
import {
  blockedBatch,
  deepFreeze,
  executedBatch,
  isSubsequence,
  newestSteps,
  pairingProblems,
  reasoning,
  retryNudge,
  systemPrompt,
  textResponse,
  userInput,
} from "./history-fixtures.ts";

const NUDGES = [MessageType.STEP_NUDGE, MessageType.PREREQUISITE_NUDGE, MessageType.RETRY_NUDGE] as const;

const text = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 400 }),
  fc.nat({ max: 3000 }).map((length) => "d".repeat(length)),
);

const iteration = fc.oneof(
  fc.record({
    kind: fc.constant("executed" as const),
    thought: fc.option(text, { nil: undefined }),
    results: fc.array(text, { minLength: 1, maxLength: 3 }),
  }),
  fc.record({
    kind: fc.constant("blocked" as const),
    thought: fc.option(text, { nil: undefined }),
    nudges: fc.array(fc.constantFrom(...NUDGES), { minLength: 1, maxLength: 3 }),
  }),
  fc.record({ kind: fc.constant("text" as const), answer: text, nudge: text }),
);

type Iteration = typeof iteration extends fc.Arbitrary<infer T> ? T : never;

function messagesOf(step: number, spec: Iteration): Message[] {
  switch (spec.kind) {
    case "executed":
      return [
        ...(spec.thought === undefined ? [] : [reasoning(step, spec.thought)]),
        ...executedBatch(step, spec.results),
      ];
    case "blocked":
      return [
        ...(spec.thought === undefined ? [] : [reasoning(step, spec.thought)]),
        ...blockedBatch(step, spec.nudges),
      ];
    case "text":
      return [textResponse(step, spec.answer), retryNudge(step, spec.nudge)];
  }
}

/** A previous turn replayed without stepIndex, as `initialMessages` would seed it. */
function seededTurn(results: readonly string[]): Message[] {
  const withoutStep = (message: Message): Message => ({
    ...message,
    metadata: { type: message.metadata.type },
  });
  return [
    ...executedBatch(-1, results).map(withoutStep),
    withoutStep(textResponse(-1, "Turn 1 done.")),
    userInput("Turn 2"),
  ];
}

const historyArb = fc
  .record({
    seeded: fc.option(fc.array(text, { minLength: 1, maxLength: 2 }), { nil: undefined }),
    iterations: fc.array(iteration, { maxLength: 14 }),
  })
  .map(({ seeded, iterations }) =>
    deepFreeze([
      systemPrompt(),
      userInput(),
      ...(seeded === undefined ? [] : seededTurn(seeded)),
      ...iterations.flatMap((spec, step) => messagesOf(step, spec)),
    ]),
  );

/** The default estimate of a whole history: total characters / 4, rounded down once. */
const tokens = (messages: readonly Message[]) => new TokenCounter(estimateTokensByChars).count(messages);

const caseArb = fc.record({
  history: historyArb,
  keepRecent: fc.nat({ max: 4 }),
  budgetFraction: fc.double({ min: 0, max: 1.2, noNaN: true }),
  stepHint: fc.constantFrom("", "[Steps completed: fetch_0]", `[Steps completed: ${"step, ".repeat(30)}]`),
});

/** Failures common to every strategy; empty when the compacted history is valid. */
function commonProblems(input: readonly Message[], output: readonly Message[], keepRecent: number): string[] {
  const problems = pairingProblems(output);
  if (output[0] !== input[0]) problems.push("first system prompt lost");
  if (!output.includes(input[1]!)) problems.push("first user input lost");
  const steps = newestSteps(input, keepRecent);
  const window = input.filter((message) => steps.has(message.metadata.stepIndex ?? Number.NaN));
  if (!isSubsequence(window, output)) problems.push("protected window changed");
  if (tokens(output) > tokens(input)) problems.push(`tokens grew ${tokens(input)} -> ${tokens(output)}`);
  return problems;
}

function checkStrategy(
  create: (keepRecent: number) => CompactStrategy,
  extra: typeof tieredProblems | undefined,
) {
  fc.assert(
    fc.property(caseArb, ({ history, keepRecent, budgetFraction, stepHint }) => {
      const snapshot = structuredClone(history);
      const trigger = Math.floor(tokens(history) * budgetFraction);
      const result = create(keepRecent).compact(history, trigger, { stepHint });
      const again = create(keepRecent).compact(history, trigger, { stepHint });
      const problems = [
        ...commonProblems(history, result.messages, keepRecent),
        ...(extra ? extra(history, result.messages) : []),
      ];
      expect(problems).toEqual([]);
      expect(history).toEqual(snapshot);
      expect(again).toEqual(result);
      if (result.phase === 0) expect(result.messages).toEqual(history);
    }),
    { numRuns: 400 },
  );
}

/** Tiered only: every executed tool call survives, and every output message comes from the input in order. */
function tieredProblems(input: readonly Message[], output: readonly Message[]): string[] {
  const problems: string[] = [];
  const answeredByResult = new Set(
    input
      .filter((message) => message.metadata.type === MessageType.TOOL_RESULT)
      .map((message) => message.toolCallId),
  );
  for (const message of input) {
    const executed = (message.toolCalls ?? []).some((call) => answeredByResult.has(call.callId));
    if (executed && !output.includes(message))
      problems.push(`executed call ${message.toolCalls![0]!.callId} cut`);
  }
  let previous = -1;
  for (const message of output) {
    if (message.metadata.type === MessageType.SUMMARY) continue;
    const source = input.includes(message)
      ? input.indexOf(message)
      : input.findIndex(
          (original) => original.role === MessageRole.TOOL && original.toolCallId === message.toolCallId,
        );
    if (source <= previous)
      problems.push(`message out of order or invented: ${message.content.slice(0, 30)}`);
    previous = source;
  }
  return problems;
}

describe("compaction properties", () => {
  it("TieredCompact keeps any generated history valid and never grows it", () => {
    checkStrategy((keepRecent) => new TieredCompact({ keepRecent }), tieredProblems);
  });

  it("SlidingWindowCompact keeps any generated history valid and never grows it", () => {
    checkStrategy((keepRecent) => new SlidingWindowCompact({ keepRecent }), undefined);
  });

  it("ContextManager.maybeCompact keeps histories valid and reports accurate events", () => {
    fc.assert(
      fc.property(
        caseArb,
        fc.integer({ min: 1, max: 50_000 }),
        ({ history, keepRecent, stepHint }, budget) => {
          const events: CompactEvent[] = [];
          const context = new ContextManager({
            strategy: new TieredCompact({ keepRecent }),
            budgetTokens: budget,
            onCompact: (event) => events.push(event),
          });
          const result = context.maybeCompact(history, 7, stepHint);
          expect(commonProblems(history, result, keepRecent)).toEqual([]);
          if (tokens(history) <= budget * 0.75) expect(result).toBe(history);
          if (result === history) expect(events).toEqual([]);
          else {
            expect(events).toHaveLength(1);
            expect(events[0]).toMatchObject({
              stepIndex: 7,
              tokensBefore: tokens(history),
              tokensAfter: tokens(result),
              messagesBefore: history.length,
              messagesAfter: result.length,
            });
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("TieredCompact is idempotent on its own output", () => {
    fc.assert(
      fc.property(caseArb, ({ history, keepRecent, stepHint }) => {
        const strategy = new TieredCompact({ keepRecent });
        const once = strategy.compact(history, 0, { stepHint });
        const twice = strategy.compact(deepFreeze(once.messages), 0, { stepHint });
        expect(twice.messages).toEqual(once.messages);
      }),
      { numRuns: 200 },
    );
  });
});
