import { describe, expect, it } from "vitest";
import { newestIterations, protectedMask } from "../../src/context/iterations.ts";
import { createMessage, MessageRole, MessageType } from "../../src/core/messages.ts";
import { executedBatch, reasoning, systemPrompt, textResponse, userInput } from "./history-fixtures.ts";

describe("newestIterations", () => {
  const history = [
    systemPrompt(),
    userInput(),
    ...executedBatch(0, ["a"]),
    ...executedBatch(1, ["b", "c"]),
    reasoning(2, "r"),
    ...executedBatch(2, ["d"]),
    createMessage(MessageRole.USER, "seeded", { type: MessageType.RETRY_NUDGE }),
  ];

  it("collects the distinct stepIndex values walking back from the end", () => {
    expect([...newestIterations(history, 2)]).toEqual([2, 1]);
    expect([...newestIterations(history, 9)]).toEqual([2, 1, 0]);
    expect(newestIterations(history, 0).size).toBe(0);
  });

  it("protects anchors and the window's messages only", () => {
    const mask = protectedMask(
      [systemPrompt(), userInput(), textResponse(0, "t"), textResponse(1, "u")],
      new Set([1]),
    );
    expect(mask).toEqual([true, true, false, true]);
  });
});
