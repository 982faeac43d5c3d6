import { describe, expect, it } from "vitest";
import { crossedThresholds } from "../../src/context/threshold-warnings.ts";

describe("crossedThresholds", () => {
  it("returns the reached fractions not fired yet, ascending and once", () => {
    expect(crossedThresholds([0.8, 0.5, 0.5, 0.9], new Set(), 0.85)).toEqual([0.5, 0.8]);
    expect(crossedThresholds([0.5, 0.8], new Set([0.5]), 0.85)).toEqual([0.8]);
    expect(crossedThresholds([0.5], new Set(), 0.49)).toEqual([]);
    expect(crossedThresholds([0.5], new Set(), 0.5)).toEqual([0.5]);
  });
});
