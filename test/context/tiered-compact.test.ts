import { describe, expect, it } from "vitest";
import { TieredCompact } from "../../src/context/tiered-compact.ts";
import { TokenCounter } from "../../src/context/token-counter.ts";
import { estimateTokensByChars } from "../../src/context/token-estimator.ts";
import { DROPPED_RESULT_CONTENT } from "../../src/context/tool-result-compaction.ts";
import { createMessage, type Message, MessageRole, MessageType } from "../../src/core/messages.ts";
import {
  blockedBatch,
  byType,
  deepFreeze,
  executedBatch,
  isSubsequence,
  pairingProblems,
  reasoning,
  retryNudge,
  systemPrompt,
  textResponse,
  userInput,
} from "./history-fixtures.ts";

/** The default estimate of a whole history: total characters / 4, rounded down once. */
const tokens = (messages: readonly Message[]) => new TokenCounter(estimateTokensByChars).count(messages);
const long = (label: string) => `${label}:${"data ".repeat(300)}`;
const HINT = "[Steps completed: fetch_0, search]";

/** Steps 0-3 are old; 4 and 5 form the default protected window. */
function buildHistory(): Message[] {
  return deepFreeze([
    systemPrompt(),
    userInput(),
    reasoning(0, "Pricing first; the catalogue has the list price."),
    ...executedBatch(0, [long("catalogue")]),
    textResponse(1, "The price is probably $10."),
    retryNudge(1),
    ...blockedBatch(2, [MessageType.STEP_NUDGE, MessageType.PREREQUISITE_NUDGE]),
    reasoning(3, "List price is $10.69 at MOQ 100; check history next."),
    ...executedBatch(3, [long("history"), "ok"]),
    reasoning(4, "History shows $9.50."),
    ...executedBatch(4, [long("quotes")]),
    ...executedBatch(5, [long("stock")]),
  ]);
}

const window = (messages: readonly Message[]) =>
  messages.filter((message) => message.metadata.stepIndex === 4 || message.metadata.stepIndex === 5);

function compactTo(phase: 1 | 2 | 3, history = buildHistory(), strategy = new TieredCompact()) {
  const before = tokens(history);
  const phase1 = strategy.compact(history, before - 1).messages;
  const trigger = phase === 1 ? before - 1 : phase === 2 ? tokens(phase1) - 1 : 0;
  return strategy.compact(history, trigger, { stepHint: HINT });
}

describe("TieredCompact", () => {
  it("applies phase 1 whenever it is called, also with a trigger above the history (the seeds' rule; ADR 007)", () => {
    const history = buildHistory();
    const phase1 = compactTo(1);
    for (const trigger of [tokens(history), tokens(history) * 10, Number.MAX_SAFE_INTEGER]) {
      const result = new TieredCompact().compact(history, trigger, { stepHint: HINT });
      expect(result.phase).toBe(1);
      expect(result.messages).toEqual(phase1.messages);
      expect(tokens(result.messages)).toBeLessThan(tokens(history));
    }
  });

  describe("phase 1", () => {
    const result = compactTo(1);

    it("stops at phase 1 once under the trigger", () => {
      expect(result.phase).toBe(1);
    });

    it("drops older nudges, with the blocked batch they answered", () => {
      expect(result.messages.filter((message) => message.metadata.stepIndex === 2)).toEqual([]);
      expect(byType(result.messages, MessageType.RETRY_NUDGE)).toEqual([]);
      expect(byType(result.messages, MessageType.STEP_NUDGE)).toEqual([]);
    });

    it("truncates older tool results to 200 chars plus a marker", () => {
      const catalogue = result.messages.find((message) => message.toolCallId === "call_0_0")!;
      const original = long("catalogue");
      expect(catalogue.content).toBe(
        `${original.slice(0, 200)}\n[Truncated — ${original.length - 200} chars removed]`,
      );
      expect(catalogue.metadata).toEqual({
        type: MessageType.TOOL_RESULT,
        stepIndex: 0,
        originalType: MessageType.TOOL_RESULT,
      });
      expect(catalogue.role).toBe(MessageRole.TOOL);
      expect(catalogue.toolName).toBe("fetch_0");
    });

    it("leaves short results, reasoning and text responses as they are", () => {
      const history = buildHistory();
      const short = history.find((message) => message.toolCallId === "call_3_1")!;
      expect(result.messages).toContainEqual(short);
      for (const message of [
        ...byType(history, MessageType.REASONING),
        ...byType(history, MessageType.TEXT_RESPONSE),
      ]) {
        expect(result.messages).toContainEqual(message);
      }
    });

    it("adds no summary", () => {
      expect(byType(result.messages, MessageType.SUMMARY)).toEqual([]);
    });
  });

  describe("phase 2", () => {
    const result = compactTo(2);

    it("escalates when phase 1 is not enough", () => {
      expect(result.phase).toBe(2);
    });

    it("replaces older tool results with a stub answer", () => {
      for (const id of ["call_0_0", "call_3_0"]) {
        const stub = result.messages.find((message) => message.toolCallId === id)!;
        expect(stub.content).toBe(DROPPED_RESULT_CONTENT);
        expect(stub.role).toBe(MessageRole.TOOL);
        expect(stub.metadata.originalType).toBe(MessageType.TOOL_RESULT);
      }
    });

    it("keeps reasoning and text responses", () => {
      expect(byType(result.messages, MessageType.REASONING)).toHaveLength(3);
      expect(byType(result.messages, MessageType.TEXT_RESPONSE)).toHaveLength(1);
    });

    it("keeps the step hint in a user summary right after the first user input", () => {
      const summary = result.messages[2]!;
      expect(result.messages[1]!.metadata.type).toBe(MessageType.USER_INPUT);
      expect(summary).toEqual({
        role: MessageRole.USER,
        content: HINT,
        metadata: { type: MessageType.SUMMARY, originalType: MessageType.TOOL_RESULT },
      });
      expect(byType(result.messages, MessageType.SUMMARY)).toHaveLength(1);
    });
  });

  describe("phase 3", () => {
    const history = buildHistory();
    const result = compactTo(3, history);

    it("drops older reasoning and text responses", () => {
      expect(result.phase).toBe(3);
      expect(byType(result.messages, MessageType.TEXT_RESPONSE)).toEqual([]);
      expect(byType(result.messages, MessageType.REASONING)).toEqual(
        history.filter(
          (message) => message.metadata.type === MessageType.REASONING && message.metadata.stepIndex === 4,
        ),
      );
    });

    it("keeps every executed tool call in full, answered", () => {
      const executed = history.filter(
        (message) => message.metadata.type === MessageType.TOOL_CALL && message.metadata.stepIndex !== 2,
      );
      expect(isSubsequence(executed, result.messages)).toBe(true);
      expect(pairingProblems(result.messages)).toEqual([]);
    });

    it("keeps the anchors and the protected window untouched", () => {
      expect(result.messages[0]).toBe(history[0]);
      expect(result.messages[1]).toBe(history[1]);
      expect(isSubsequence(window(history), result.messages)).toBe(true);
    });

    it("returns phase 3 even when it cannot get under the trigger", () => {
      expect(tokens(result.messages)).toBeGreaterThan(0);
    });
  });

  describe("pairing over the seeds' drops (docs/decisions/006)", () => {
    /** The seeds' table taken literally: outside the window, nudges go, results are truncated then dropped, tool calls stay. */
    function seedsLiteral(history: readonly Message[], phase: 1 | 2 | 3): Message[] {
      const drop = new Set<MessageType>([
        MessageType.STEP_NUDGE,
        MessageType.PREREQUISITE_NUDGE,
        MessageType.RETRY_NUDGE,
      ]);
      if (phase >= 2) drop.add(MessageType.TOOL_RESULT);
      if (phase === 3) {
        drop.add(MessageType.REASONING);
        drop.add(MessageType.TEXT_RESPONSE);
      }
      return history.flatMap((message, index) => {
        const step = message.metadata.stepIndex;
        if (index < 2 || step === 4 || step === 5) return [message];
        if (drop.has(message.metadata.type)) return [];
        if (message.metadata.type === MessageType.TOOL_RESULT && message.content.length > 200) {
          const removed = message.content.length - 200;
          return [
            {
              ...message,
              content: `${message.content.slice(0, 200)}\n[Truncated — ${removed} chars removed]`,
            },
          ];
        }
        return [message];
      });
    }
    const key = (message: Message) =>
      JSON.stringify([
        message.role,
        message.metadata.type,
        message.toolCallId ?? null,
        message.toolCalls ?? null,
        message.content,
      ]);
    const minus = (left: readonly Message[], right: readonly Message[]) => {
      const keys = new Set(right.map(key));
      return left.filter((message) => !keys.has(key(message)));
    };

    it.each([1, 2, 3] as const)(
      "phase %i: every call stays answered, where the seeds' literal drops leave calls unanswered",
      (phase) => {
        const history = buildHistory();
        const ours = compactTo(phase, history);
        const literal = seedsLiteral(history, phase);
        expect(ours.phase).toBe(phase);
        expect(pairingProblems(ours.messages)).toEqual([]);
        expect(pairingProblems(literal).length).toBeGreaterThan(0);
      },
    );

    it.each([1, 2, 3] as const)(
      "phase %i: differs from the seeds only by stubs, the step summary and the blocked batch's call",
      (phase) => {
        const history = buildHistory();
        const ours = compactTo(phase, history).messages;
        const literal = seedsLiteral(history, phase);
        const blockedCall = history.find((message) => message.metadata.stepIndex === 2 && message.toolCalls);
        // The seeds keep the call of a batch that never ran (its nudges gone); it goes with its nudges here.
        expect(minus(literal, ours)).toEqual([blockedCall]);
        const extra = minus(ours, literal);
        // A result no longer than the stub stays as it is (the stub would not save anything).
        const answers = extra.filter((message) => message.role === MessageRole.TOOL);
        expect(answers.every((message) => message.content.length <= DROPPED_RESULT_CONTENT.length)).toBe(
          true,
        );
        expect(
          extra.filter((message) => message.role !== MessageRole.TOOL).map((m) => m.metadata.type),
        ).toEqual(phase === 1 ? [] : [MessageType.SUMMARY]);
        // Phase 1 adds nothing; phases 2 and 3 stub step 0's and step 3's long results and keep step 3's "ok".
        expect(answers.map((message) => message.content)).toEqual(
          phase === 1 ? [] : [DROPPED_RESULT_CONTENT, DROPPED_RESULT_CONTENT, "ok"],
        );
      },
    );

    it("never cuts the anchors, executed tool calls, or the protected window, in any phase", () => {
      const history = buildHistory();
      for (const phase of [1, 2, 3] as const) {
        const { messages } = compactTo(phase, history);
        expect(messages[0]).toBe(history[0]);
        expect(messages[1]).toBe(history[1]);
        const executedCalls = history.filter(
          (message) => message.toolCalls && message.metadata.stepIndex !== 2,
        );
        expect(isSubsequence(executedCalls, messages)).toBe(true);
        expect(isSubsequence(window(history), messages)).toBe(true);
        expect(byType(messages, MessageType.RETRY_NUDGE)).toEqual([]);
      }
    });
  });

  it("never mutates its (deep-frozen) input and is deterministic", () => {
    const history = buildHistory();
    const snapshot = structuredClone(history);
    const first = new TieredCompact().compact(history, 0, { stepHint: HINT });
    const second = new TieredCompact().compact(history, 0, { stepHint: HINT });
    expect(history).toEqual(snapshot);
    expect(first).toEqual(second);
  });

  it("is idempotent: compacting its own output changes nothing more", () => {
    const once = new TieredCompact().compact(buildHistory(), 0, { stepHint: HINT });
    const twice = new TieredCompact().compact(deepFreeze(once.messages), 0, { stepHint: HINT });
    // Still over a trigger of 0, so it escalates to phase 3 again, with nothing left to cut.
    expect(twice.phase).toBe(3);
    expect(twice.messages).toEqual(once.messages);
  });

  it("updates the one step summary instead of adding another", () => {
    const once = new TieredCompact().compact(buildHistory(), 0, { stepHint: HINT });
    const grown = deepFreeze([
      ...once.messages,
      ...executedBatch(6, [long("more")]),
      ...executedBatch(7, ["x"]),
    ]);
    const twice = new TieredCompact().compact(grown, 0, {
      stepHint: "[Steps completed: fetch_0, search, more]",
    });
    const summaries = byType(twice.messages, MessageType.SUMMARY);
    expect(summaries).toHaveLength(1);
    expect(summaries[0]!.content).toBe("[Steps completed: fetch_0, search, more]");
    expect(twice.messages.indexOf(summaries[0]!)).toBe(2);
  });

  it("adds no summary without a step hint", () => {
    const result = new TieredCompact().compact(buildHistory(), 0);
    expect(byType(result.messages, MessageType.SUMMARY)).toEqual([]);
  });

  it("never cuts system prompts, user inputs or foreign summaries", () => {
    const foreignSummary = createMessage(MessageRole.USER, "Earlier: the user prefers EUR.", {
      type: MessageType.SUMMARY,
    });
    const history = deepFreeze([
      systemPrompt(),
      userInput("turn 1"),
      foreignSummary,
      ...executedBatch(0, [long("a")]),
      userInput("turn 2"),
      ...executedBatch(1, [long("b")]),
      ...executedBatch(2, [long("c")]),
    ]);
    const result = new TieredCompact({ keepRecent: 0 }).compact(history, 0);
    expect(result.phase).toBe(3);
    for (const index of [0, 1, 2, 5]) expect(result.messages).toContain(history[index]);
  });

  it("keeps a blocked batch whose nudges reach into the protected window", () => {
    const [call, nudge] = blockedBatch(3, [MessageType.STEP_NUDGE]);
    const straddling = { ...nudge!, metadata: { ...nudge!.metadata, stepIndex: 4 } };
    const history = deepFreeze([
      systemPrompt(),
      userInput(),
      ...executedBatch(0, [long("a")]),
      call!,
      straddling,
    ]);
    const result = new TieredCompact({ keepRecent: 1 }).compact(history, 0);
    expect(result.messages).toContain(call);
    expect(result.messages).toContain(straddling);
    expect(pairingProblems(result.messages)).toEqual([]);
  });

  it("keeps a blocked batch inside the protected window", () => {
    const history = deepFreeze([
      systemPrompt(),
      userInput(),
      ...executedBatch(0, [long("a")]),
      ...blockedBatch(1, [MessageType.STEP_NUDGE]),
    ]);
    const result = new TieredCompact({ keepRecent: 1 }).compact(history, 0);
    expect(result.messages.slice(-2)).toEqual(history.slice(-2));
  });

  it("keeps a nudge that answers a call of an executed batch", () => {
    const [call, result0] = executedBatch(0, [long("a"), "unused"]);
    const notRun = createMessage(
      MessageRole.TOOL,
      "[PrereqError] fetch_1 needs fetch_0 first.",
      { type: MessageType.PREREQUISITE_NUDGE, stepIndex: 0 },
      { toolName: "fetch_1", toolCallId: "call_0_1" },
    );
    const history = deepFreeze([
      systemPrompt(),
      userInput(),
      call!,
      result0!,
      notRun,
      ...executedBatch(1, ["x"]),
    ]);
    const result = new TieredCompact({ keepRecent: 1 }).compact(history, 0);
    expect(result.messages).toContain(call);
    expect(result.messages).toContain(notRun);
    expect(pairingProblems(result.messages)).toEqual([]);
  });

  it("treats seeded messages without stepIndex as outside the window", () => {
    const seeded = [textResponse(0, "old answer").content, "The previous turn's long answer ".repeat(40)].map(
      (content) => createMessage(MessageRole.ASSISTANT, content, { type: MessageType.TEXT_RESPONSE }),
    );
    const history = deepFreeze([
      systemPrompt(),
      userInput(),
      ...seeded,
      userInput("again"),
      ...executedBatch(0, ["x"]),
    ]);
    const result = new TieredCompact({ keepRecent: 5 }).compact(history, 0);
    expect(byType(result.messages, MessageType.TEXT_RESPONSE)).toEqual([]);
    expect(byType(result.messages, MessageType.USER_INPUT)).toHaveLength(2);
  });

  it("widens the protected window with keepRecent", () => {
    const history = buildHistory();
    const result = new TieredCompact({ keepRecent: 3 }).compact(history, 0);
    const protectedSteps = history.filter((message) => [3, 4, 5].includes(message.metadata.stepIndex ?? -1));
    expect(isSubsequence(protectedSteps, result.messages)).toBe(true);
    const everything = new TieredCompact({ keepRecent: 0 }).compact(history, 0);
    expect(everything.messages.some((message) => message.content === DROPPED_RESULT_CONTENT)).toBe(true);
    expect(everything.messages.find((message) => message.toolCallId === "call_5_0")!.content).toBe(
      DROPPED_RESULT_CONTENT,
    );
  });

  it("honours truncateChars", () => {
    const history = buildHistory();
    const result = new TieredCompact({ truncateChars: 50 }).compact(history, tokens(history) - 1);
    expect(result.messages.find((message) => message.toolCallId === "call_0_0")!.content).toMatch(
      /^.{50}\n\[Truncated — \d+ chars removed\]$/s,
    );
  });

  it("escalates on the caller's estimate", () => {
    const history = buildHistory();
    const countsMessages = (messages: readonly Message[]) => messages.length;
    // 19 messages; phases 1 and 2 leave 15 (> 14), phase 3 drops 3 reasoning/text messages more.
    const result = new TieredCompact().compact(history, 14, { estimateTokens: countsMessages });
    expect(history).toHaveLength(19);
    expect(result.phase).toBe(3);
    expect(result.messages).toHaveLength(12);
  });

  it("reports the phase it reached even when everything is protected (the seeds' phase_reached)", () => {
    const history = deepFreeze([systemPrompt(), userInput(), ...executedBatch(0, [long("a")])]);
    const result = new TieredCompact({ keepRecent: 1 }).compact(history, 0, { stepHint: HINT });
    expect(result).toEqual({ messages: history, phase: 3 });
    expect(result.messages).not.toBe(history);
  });

  it("reports phase 3 when still over after phase 2, though phase 3 had nothing left to cut", () => {
    const history = deepFreeze([
      systemPrompt(),
      userInput(),
      ...executedBatch(0, [long("a")]),
      ...executedBatch(1, ["short"]),
    ]);
    const result = new TieredCompact({ keepRecent: 1 }).compact(history, 0);
    expect(result.phase).toBe(3);
    expect(result.messages.find((message) => message.toolCallId === "call_0_0")?.content).toBe(
      DROPPED_RESULT_CONTENT,
    );
  });

  it("reports phase 1 when phase 1 alone gets under the trigger", () => {
    const history = deepFreeze([
      systemPrompt(),
      userInput(),
      ...executedBatch(0, [long("a")]),
      ...executedBatch(1, ["short"]),
    ]);
    const result = new TieredCompact({ keepRecent: 1 }).compact(history, tokens(history) - 100);
    expect(result.phase).toBe(1);
    expect(result.messages.find((message) => message.toolCallId === "call_0_0")?.content).toMatch(
      /\[Truncated — /,
    );
  });

  it("rejects a bad keepRecent or truncateChars, naming it", () => {
    expect(() => new TieredCompact({ keepRecent: -1 })).toThrow(/keepRecent/);
    expect(() => new TieredCompact({ truncateChars: 1.5 })).toThrow(RangeError);
  });
});
