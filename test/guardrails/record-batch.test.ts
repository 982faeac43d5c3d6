/**
 * Guardrails.recordBatch: a foreign loop reports an executed batch in one call and gets the
 * loop's rules: successful calls are steps, a failing batch counts one tool error (fatal past the
 * budget, even when another call of it succeeded), a clean batch resets the streaks.
 */
import { describe, expect, it } from "vitest";
import { Guardrails } from "../../src/guardrails/guardrails.ts";

const make = (maxToolErrors = 1) =>
  new Guardrails({
    toolNames: ["search", "lookup", "answer"],
    requiredSteps: ["search"],
    terminalTool: "answer",
    maxToolErrors,
  });

describe("Guardrails.recordBatch", () => {
  it("records the calls that succeeded in a failing batch and counts one tool error", () => {
    const guardrails = make(1);
    const first = guardrails.recordBatch([
      { tool: "search", ok: true },
      { tool: "lookup", ok: false, error: new TypeError("down") },
    ]);
    expect(first).toEqual({ done: false, fatal: null });
    expect(guardrails.enforcer.completedSteps).toEqual(["search"]);
    expect(guardrails.errors.toolErrors).toBe(1);
    const second = guardrails.recordBatch([{ tool: "lookup", ok: false, error: new TypeError("down") }]);
    expect(second.fatal).toMatchObject({
      action: "fatal",
      reason: expect.stringContaining("TypeError: down"),
    });
  });

  it("does not count soft errors, and a clean batch resets the streak", () => {
    const guardrails = make(1);
    guardrails.recordBatch([{ tool: "lookup", ok: false }]);
    expect(guardrails.recordBatch([{ tool: "lookup", ok: false, softError: true }]).fatal).toBeNull();
    guardrails.recordBatch([{ tool: "search", ok: true }]);
    expect(guardrails.errors.toolErrors).toBe(0);
  });

  it("is done once the terminal tool succeeded with the required steps satisfied", () => {
    const guardrails = make();
    expect(guardrails.recordBatch([{ tool: "answer", ok: true }]).done).toBe(false);
    expect(
      guardrails.recordBatch([
        { tool: "search", ok: true },
        { tool: "answer", ok: true },
      ]).done,
    ).toBe(true);
  });
});
