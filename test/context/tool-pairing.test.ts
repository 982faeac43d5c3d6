import { describe, expect, it } from "vitest";
import { pairToolMessages } from "../../src/context/tool-pairing.ts";
import { createMessage, MessageRole, MessageType } from "../../src/core/messages.ts";
import { blockedBatch, executedBatch, systemPrompt, userInput } from "./history-fixtures.ts";

describe("pairToolMessages", () => {
  it("links each answer to its tool-call message and finds blocked batches", () => {
    const history = [
      systemPrompt(),
      userInput(),
      ...executedBatch(0, ["a", "b"]),
      ...blockedBatch(1, [MessageType.STEP_NUDGE, MessageType.PREREQUISITE_NUDGE]),
    ];
    const pairing = pairToolMessages(history);
    expect([...pairing.answersOf]).toEqual([
      [2, [3, 4]],
      [5, [6, 7]],
    ]);
    expect(pairing.ownerOf[7]).toBe(5);
    expect([...pairing.blocked]).toEqual([5]);
  });

  it("does not call a batch blocked when one call got a real result", () => {
    const [call, result] = executedBatch(0, ["a", "b"]);
    const nudge = createMessage(
      MessageRole.TOOL,
      "not run",
      { type: MessageType.STEP_NUDGE, stepIndex: 0 },
      { toolCallId: "call_0_1" },
    );
    expect(pairToolMessages([call!, result!, nudge]).blocked.size).toBe(0);
  });

  it("does not call a batch blocked while one of its calls is unanswered", () => {
    const [call, nudge] = blockedBatch(0, [MessageType.STEP_NUDGE, MessageType.STEP_NUDGE]);
    expect(pairToolMessages([call!, nudge!]).blocked.size).toBe(0);
  });

  it("links a reused call id to the newest preceding call and leaves orphans unlinked", () => {
    const first = executedBatch(0, ["a"]);
    const second = executedBatch(0, ["b"]);
    const orphan = createMessage(
      MessageRole.TOOL,
      "?",
      { type: MessageType.TOOL_RESULT },
      { toolCallId: "nope" },
    );
    const pairing = pairToolMessages([orphan, ...first, ...second]);
    expect(pairing.ownerOf[2]).toBe(1);
    expect(pairing.ownerOf[4]).toBe(3);
    expect(pairing.ownerOf[0]).toBe(-1);
  });

  it("finds an older batch's call after a newer batch, and keeps indexing later batches", () => {
    const call = (id: string, ...more: string[]) =>
      createMessage(
        MessageRole.ASSISTANT,
        "",
        { type: MessageType.TOOL_CALL },
        { toolCalls: [id, ...more].map((callId) => ({ name: "t", args: {}, callId })) },
      );
    const answer = (id: string) =>
      createMessage(MessageRole.TOOL, "r", { type: MessageType.TOOL_RESULT }, { toolCallId: id });
    const history = [
      call("a"),
      call("b"),
      answer("a"),
      call("c", "a"),
      answer("b"),
      answer("a"),
      call("d"),
      answer("c"),
    ];
    expect(pairToolMessages(history).ownerOf).toEqual([-1, -1, 0, -1, 1, 3, -1, 3]);
  });
});
