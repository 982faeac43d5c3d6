import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_RETRY_BOUNDS,
  findDegenerateRepetition,
  reachedCap,
  retryReplyCap,
} from "../../src/guardrails/bounded-retry.ts";

const bounds = DEFAULT_RETRY_BOUNDS;

describe("retryReplyCap", () => {
  it("is max(floor, factor × the first answer), never above the client's ask", () => {
    expect(retryReplyCap(100, 32_000, bounds)).toBe(400);
    expect(retryReplyCap(10, 32_000, bounds)).toBe(256);
    expect(retryReplyCap(100, 300, bounds)).toBe(300);
    expect(retryReplyCap(100, undefined, bounds)).toBe(400);
    expect(retryReplyCap(undefined, 500, bounds)).toBe(500);
    expect(retryReplyCap(3, undefined, { retryFactor: 2, retryFloorTokens: 1 })).toBe(6);
  });
});

describe("reachedCap", () => {
  it("is true from 95 % of a cap, never without one", () => {
    expect(reachedCap(256, 256)).toBe(true);
    expect(reachedCap(244, 256)).toBe(true);
    expect(reachedCap(200, 256)).toBe(false);
    expect(reachedCap(10_000, undefined)).toBe(false);
  });
});

describe("findDegenerateRepetition", () => {
  it("finds a phrase looping at the end, and keeps the text before it", () => {
    const intro = "I will fix the bug now.\n";
    const phrase = "Let me check the file again. ";
    const found = findDegenerateRepetition(intro + phrase.repeat(20), bounds);
    expect(found).not.toBeNull();
    expect(found?.period).toBe(phrase.length);
    expect((intro + phrase.repeat(20)).slice(0, (found?.start ?? 0) + (found?.period ?? 0))).toBe(
      // The cut may fall inside the phrase's rotation: one copy of the loop stays.
      (intro + phrase.repeat(20)).slice(0, (found?.start ?? 0) + phrase.length),
    );
    expect(found?.repeats).toBeGreaterThanOrEqual(bounds.minRepeats);
  });

  it("finds a single character or token stuck", () => {
    expect(findDegenerateRepetition(`x = ${"0".repeat(500)}`, bounds)?.period).toBe(1);
    expect(findDegenerateRepetition("the ".repeat(120), bounds)?.period).toBe(4);
  });

  it("leaves alone text that repeats too little, or too short a stretch", () => {
    expect(findDegenerateRepetition("Let me check. ".repeat(7), bounds)).toBeNull();
    expect(findDegenerateRepetition("ab".repeat(150), bounds)).toBeNull();
    const code = Array.from({ length: 40 }, (_, index) => `const value${index} = compute(${index});\n`).join(
      "",
    );
    expect(findDegenerateRepetition(code, bounds)).toBeNull();
    const table = `| a | b |\n|---|---|\n${Array.from({ length: 30 }, (_, index) => `| ${index} | ${index * 2} |\n`).join("")}`;
    expect(findDegenerateRepetition(table, bounds)).toBeNull();
  });

  it("finds any stretch repeated past the bounds (property)", () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 0, maxLength: 80 }),
        fc.string({ minLength: 1, maxLength: bounds.maxPeriod }),
        fc.integer({ min: 0, max: 20 }),
        (prefix, unit, extra) => {
          const copies = Math.max(bounds.minRepeats, Math.ceil(bounds.minChars / unit.length)) + extra;
          const text = prefix + unit.repeat(copies);
          const found = findDegenerateRepetition(text, bounds);
          expect(found).not.toBeNull();
          if (found === null) return;
          // What is kept ends the text's prefix plus at most one copy of the loop (or less).
          const kept = text.slice(0, found.start + found.period);
          expect(kept.length).toBeLessThanOrEqual(prefix.length + unit.length);
          expect(text.startsWith(kept)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("never reports text whose tail does not repeat (property)", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0x4e00, max: 0x9fff }), { minLength: 0, maxLength: 600 }),
        (codes) => {
          expect(findDegenerateRepetition(String.fromCharCode(...codes), bounds)).toBeNull();
        },
      ),
      { numRuns: 200 },
    );
  });
});
