import { describe, expect, it } from "vitest";
import { createStepSummary, upsertStepSummary, withStepSummary } from "../../src/context/step-summary.ts";
import { MessageType } from "../../src/core/messages.ts";
import { deepFreeze, executedBatch, systemPrompt, userInput } from "./history-fixtures.ts";

describe("upsertStepSummary", () => {
  it("inserts the summary right after the first user input", () => {
    const history = deepFreeze([systemPrompt(), userInput(), ...executedBatch(0, ["a"])]);
    const result = upsertStepSummary(history, "[Steps completed: a]");
    expect(result).toHaveLength(5);
    expect(result[2]).toEqual(createStepSummary("[Steps completed: a]"));
  });

  it("falls back to after the system prompt, then to the start", () => {
    expect(upsertStepSummary([systemPrompt()], "h")[1]!.metadata.type).toBe(MessageType.SUMMARY);
    expect(upsertStepSummary(executedBatch(0, ["a"]), "h")[0]!.metadata.type).toBe(MessageType.SUMMARY);
  });

  it("updates an existing summary where it stands, reusing it when unchanged", () => {
    const history = deepFreeze([
      systemPrompt(),
      userInput(),
      createStepSummary("old"),
      ...executedBatch(0, ["a"]),
    ]);
    const updated = upsertStepSummary(history, "new");
    expect(updated).toEqual([history[0], history[1], createStepSummary("new"), ...history.slice(3)]);
    expect(updated[3]).toBe(history[3]);
    expect(upsertStepSummary(history, "old")[2]).toBe(history[2]);
  });
});

describe("withStepSummary", () => {
  const history = [systemPrompt(), userInput()];
  const count = (messages: readonly unknown[]) => messages.length;

  it("adds the summary when it fits under the ceiling", () => {
    expect(withStepSummary(history, "h", count, 3)).toHaveLength(3);
  });

  it("leaves the history alone when the summary would grow it past the ceiling, or without a hint", () => {
    expect(withStepSummary(history, "h", count, 2)).toBe(history);
    expect(withStepSummary(history, "", count, 10)).toBe(history);
  });
});
