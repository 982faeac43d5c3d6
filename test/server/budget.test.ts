/** The pure budget decisions: Ollama's VRAM tiers, forge-fast's halving, `-c` per slot, manual tokens. */
import { describe, expect, it } from "vitest";
import { BudgetResolutionError } from "../../src/core/errors.ts";
import {
  checkManualTokens,
  contextFlagForSlot,
  halveContext,
  ollamaTierTokens,
} from "../../src/server/budget.ts";
import { BudgetMode, isBudgetMode } from "../../src/server/budget-mode.ts";

describe("BudgetMode", () => {
  it("has the four modes with their wire strings", () => {
    expect(BudgetMode).toEqual({
      BACKEND: "backend",
      MANUAL: "manual",
      FORGE_FULL: "forge-full",
      FORGE_FAST: "forge-fast",
    });
    expect(isBudgetMode("forge-fast")).toBe(true);
    expect(isBudgetMode("forge_fast")).toBe(false);
    expect(isBudgetMode(undefined)).toBe(false);
  });
});

describe("ollamaTierTokens", () => {
  it.each([
    [null, 4096],
    [0, 4096],
    [8192, 4096],
    [24 * 1024 - 1, 4096],
    [24 * 1024, 32_768],
    [48 * 1024 - 1, 32_768],
    [48 * 1024, 262_144],
    [80 * 1024, 262_144],
  ])("%s MiB → %i tokens", (vram, tokens) => {
    expect(ollamaTierTokens(vram)).toBe(tokens);
  });
});

describe("halveContext", () => {
  it("halves, rounding down", () => {
    expect(halveContext(2048)).toBe(1024);
    expect(halveContext(36_865)).toBe(18_432);
  });
});

describe("contextFlagForSlot", () => {
  it("gives -c = per-slot tokens with a unified cache (the default when the slot count is automatic)", () => {
    expect(contextFlagForSlot(1024)).toBe(1024);
    expect(contextFlagForSlot(1024, { slots: 4, kvUnified: true })).toBe(1024);
  });

  it("multiplies by the slots when each slot has its own share", () => {
    expect(contextFlagForSlot(1024, { slots: 2 })).toBe(2048);
    expect(contextFlagForSlot(1024, { slots: 3, kvUnified: false })).toBe(3072);
    expect(contextFlagForSlot(1024, { kvUnified: false })).toBe(1024);
  });
});

describe("checkManualTokens", () => {
  it("accepts a positive integer", () => {
    expect(checkManualTokens(8192)).toBe(8192);
  });

  it.each([undefined, 0, -5, 1.5, Number.NaN])("rejects %s with BudgetResolutionError", (value) => {
    expect(() => checkManualTokens(value)).toThrow(BudgetResolutionError);
    expect(() => checkManualTokens(value)).toThrow(/needs manualTokens, a positive integer/);
  });
});
