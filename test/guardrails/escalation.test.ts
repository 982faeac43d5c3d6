/**
 * Escalation as a pure function of the guard counters: which tier serves the next call, and
 * the record of calls and switches.
 */
import { describe, expect, it } from "vitest";
import { createGuardCounters, type GuardCounters } from "../../src/guardrails/decisions.ts";
import {
  createEscalationRecord,
  type EscalationRecord,
  type EscalationRule,
  escalateFor,
  escalationCount,
  failureStreak,
} from "../../src/guardrails/escalation.ts";

const counters = (changes: Partial<GuardCounters> = {}): GuardCounters => ({
  ...createGuardCounters(),
  ...changes,
});

/** Feed a sequence of counters (one per LLM call) through `escalateFor`. */
function walk(rules: EscalationRule[], sequence: Partial<GuardCounters>[]): EscalationRecord {
  return sequence.reduce<EscalationRecord>(
    (record, changes, index) => escalateFor(record, rules, counters(changes), index + 1),
    createEscalationRecord(),
  );
}

const strong: EscalationRule = { after: 2, name: "strong", stay: false };

describe("failureStreak", () => {
  it("is the longest streak and its kind, or null", () => {
    expect(failureStreak(counters())).toBeNull();
    expect(failureStreak(counters({ consecutiveRetries: 1, prematureAttempts: 2 }))).toEqual({
      kind: "premature",
      count: 2,
    });
    expect(failureStreak(counters({ consecutiveToolErrors: 3 }))).toEqual({ kind: "tool_errors", count: 3 });
  });
});

describe("escalateFor", () => {
  it("switches after n failures of one kind, and back once the streak ends", () => {
    const record = walk(
      [strong],
      [{}, { consecutiveRetries: 1 }, { consecutiveRetries: 2 }, {}, { prereqViolations: 1 }],
    );
    expect(record.servedBy).toEqual(["base", "base", "strong", "base", "base"]);
    expect(record.switches).toEqual([
      { iteration: 3, from: "base", to: "strong", reason: "retries", streak: 2 },
      { iteration: 4, from: "strong", to: "base", reason: "recovered", streak: 0 },
    ]);
    expect(escalationCount(record)).toBe(1);
    expect(record.tier).toBe(0);
  });

  it("does not add up failures of different kinds", () => {
    const record = walk([strong], [{ consecutiveRetries: 1, prematureAttempts: 1, prereqViolations: 1 }]);
    expect(record.servedBy).toEqual(["base"]);
  });

  it("stays on the stronger client while its calls fail too", () => {
    const record = walk([strong], [{ consecutiveToolErrors: 2 }, { consecutiveToolErrors: 3 }, {}]);
    expect(record.servedBy).toEqual(["strong", "strong", "base"]);
  });

  it("stays for the rest of the run when the tier says so", () => {
    const record = walk([{ ...strong, stay: true }], [{ consecutiveRetries: 2 }, {}, {}]);
    expect(record.servedBy).toEqual(["strong", "strong", "strong"]);
    expect(record.switches).toHaveLength(1);
  });

  it("climbs a list of tiers by the streak's length", () => {
    const rules: EscalationRule[] = [strong, { after: 3, name: "strongest", stay: false }];
    const record = walk(rules, [
      { consecutiveRetries: 1 },
      { consecutiveRetries: 2 },
      { consecutiveRetries: 3 },
      {},
    ]);
    expect(record.servedBy).toEqual(["base", "strong", "strongest", "base"]);
    expect(record.switches.map((change) => `${change.from}→${change.to}`)).toEqual([
      "base→strong",
      "strong→strongest",
      "strongest→base",
    ]);
    expect(escalationCount(record)).toBe(2);
  });
});
