/**
 * The rank rules (ADR 016), pure: `resolveRank` reads `rank`, else its deprecated alias
 * `priority`, and refuses the two when they differ; `rankOfQueuePriority` turns the run queue's
 * higher-first priority into a lower-first rank; `assertFiniteRank` keeps waiters orderable.
 */
import { describe, expect, it } from "vitest";
import { ForgeError, RankConflictError } from "../../src/core/errors.ts";
import { assertFiniteRank, rankOfQueuePriority, resolveRank } from "../../src/core/rank.ts";

describe("resolveRank", () => {
  it("reads rank, else priority, else nothing", () => {
    expect(resolveRank({ rank: 2 }, "owner")).toBe(2);
    expect(resolveRank({ priority: 2 }, "owner")).toBe(2);
    expect(resolveRank({ rank: -1, priority: -1 }, "owner")).toBe(-1);
    expect(resolveRank({}, "owner")).toBeUndefined();
  });

  it("throws RankConflictError, a ForgeError naming the owner and which to keep, when they differ", () => {
    let thrown: unknown;
    try {
      resolveRank({ rank: 0, priority: 1 }, "SlotWorker.submit");
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(RankConflictError);
    expect(thrown).toBeInstanceOf(ForgeError);
    expect(thrown).toMatchObject({
      name: "RankConflictError",
      rank: 0,
      priority: 1,
      message:
        "SlotWorker.submit: rank 0 and priority 1 disagree. Keep rank (lower is served first) and drop priority, its deprecated alias.",
    });
  });
});

describe("rankOfQueuePriority", () => {
  it("serves a higher queue priority first: a lower rank, and 0 stays 0", () => {
    expect(rankOfQueuePriority(4)).toBe(-4);
    expect(rankOfQueuePriority(-3)).toBe(3);
    expect(Object.is(rankOfQueuePriority(0), 0)).toBe(true);
    const ranks = [0, 7, -2, 3].map(rankOfQueuePriority);
    expect([...ranks].sort((left, right) => left - right)).toEqual([-7, -3, 0, 2]);
  });
});

describe("assertFiniteRank", () => {
  it("passes a finite rank and refuses NaN and infinities with a RangeError", () => {
    expect(assertFiniteRank(-2.5)).toBe(-2.5);
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      expect(() => assertFiniteRank(bad)).toThrow(RangeError);
    }
    expect(() => assertFiniteRank(Number.NaN)).toThrow(
      "rank (or its deprecated alias priority) must be a finite number, got NaN",
    );
  });
});
