import { describe, expect, it } from "vitest";
import type { RunRow } from "../../eval/batch/row.ts";
import { buildReport } from "../../eval/metrics/aggregate.ts";
import { mcnemarExact, wilsonInterval } from "../../eval/metrics/stats.ts";
import { fakeRow as row } from "./helpers.ts";

describe("Wilson intervals", () => {
  it("match published values and stay inside [0, 1] at the edges", () => {
    const nine = wilsonInterval(9, 10);
    expect(nine.estimate).toBe(0.9);
    expect(nine.low).toBeCloseTo(0.5958, 3);
    expect(nine.high).toBeCloseTo(0.9821, 3);
    expect(wilsonInterval(0, 10)).toMatchObject({ estimate: 0, low: 0 });
    expect(wilsonInterval(0, 10).high).toBeCloseTo(0.2775, 3);
    expect(wilsonInterval(10, 10).high).toBe(1);
    expect(wilsonInterval(0, 0)).toEqual({ estimate: 0, low: 0, high: 1 });
  });
});

describe("the exact McNemar test", () => {
  it("matches the binomial tail on the discordant pairs and is symmetric", () => {
    expect(mcnemarExact(10, 1).pValue).toBeCloseTo(0.01172, 4);
    expect(mcnemarExact(1, 10).pValue).toBeCloseTo(mcnemarExact(10, 1).pValue, 12);
    expect(mcnemarExact(5, 5).pValue).toBe(1);
    expect(mcnemarExact(0, 0).pValue).toBe(1);
    expect(mcnemarExact(0, 6).pValue).toBeCloseTo(0.03125, 6);
    // Large counts do not underflow.
    expect(mcnemarExact(700, 600).pValue).toBeGreaterThan(0.005);
    expect(mcnemarExact(700, 600).pValue).toBeLessThan(0.01);
  });
});

describe("aggregation", () => {
  it("scores per config and scenario, sorts by score, and pairs runs for the deltas", () => {
    const rows: RunRow[] = [];
    for (let run = 0; run < 10; run += 1) {
      rows.push(row("reforged", "a", run, true), row("reforged", "b", run, run < 8));
      rows.push(row("bare", "a", run, run < 3), row("bare", "b", run, run < 2));
    }
    const report = buildReport(rows);
    expect(report.groups.map((group) => group.name)).toEqual(["reforged", "bare"]);
    const reforged = report.groups[0]!;
    expect(reforged.metrics).toMatchObject({ runs: 20, correct: 18, completed: 18 });
    expect(reforged.byScenario.get("b")?.score.estimate).toBe(0.8);
    const comparison = report.comparisons[0]!;
    expect(comparison).toMatchObject({ group: "bare", baseline: "reforged", pairs: 20 });
    expect(comparison.delta).toBeCloseTo((5 - 18) / 20, 10);
    expect(comparison.test.onlyFirst).toBe(13);
    expect(comparison.test.onlySecond).toBe(0);
    expect(comparison.test.pValue).toBeLessThan(0.001);
  });
});
