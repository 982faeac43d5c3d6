/**
 * Validators of a terminal call's arguments: small matchers that say what is wrong, or null.
 */
import type { TerminalCall } from "./scenario.ts";

/** Checks one argument: the problem, or null when the value is acceptable. */
export type ArgCheck = (value: unknown) => string | null;

const show = (value: unknown) => JSON.stringify(value) ?? String(value);

/** Exactly this JSON value (numbers compared with a 1e-9 tolerance). */
export function equals(expected: unknown): ArgCheck {
  return (value) => (sameJson(value, expected) ? null : `expected ${show(expected)}, got ${show(value)}`);
}

/** A string equal to `expected`, ignoring case and surrounding whitespace. */
export function sameText(expected: string): ArgCheck {
  return (value) =>
    typeof value === "string" && value.trim().toLowerCase() === expected.toLowerCase()
      ? null
      : `expected "${expected}", got ${show(value)}`;
}

/** A string that mentions every one of `words` (case-insensitive). */
export function mentions(...words: string[]): ArgCheck {
  return (value) => {
    if (typeof value !== "string") return `expected text, got ${show(value)}`;
    const lower = value.toLowerCase();
    const missing = words.filter((word) => !lower.includes(word.toLowerCase()));
    return missing.length === 0 ? null : `does not mention ${missing.map((word) => `"${word}"`).join(", ")}`;
  };
}

/** A string that mentions none of `words` (case-insensitive). */
export function avoids(...words: string[]): ArgCheck {
  return (value) => {
    if (typeof value !== "string") return `expected text, got ${show(value)}`;
    const lower = value.toLowerCase();
    const found = words.filter((word) => lower.includes(word.toLowerCase()));
    return found.length === 0 ? null : `mentions ${found.map((word) => `"${word}"`).join(", ")}`;
  };
}

/** A number within `tolerance` of `expected`. */
export function near(expected: number, tolerance = 0.01): ArgCheck {
  return (value) =>
    typeof value === "number" && Math.abs(value - expected) <= tolerance
      ? null
      : `expected ${expected} ± ${tolerance}, got ${show(value)}`;
}

/** An array holding exactly these values, in any order (strings compared case-insensitively). */
export function sameSet(expected: readonly unknown[]): ArgCheck {
  const key = (item: unknown) => (typeof item === "string" ? item.toLowerCase() : show(item));
  const wanted = expected.map(key).sort();
  return (value) => {
    if (!Array.isArray(value)) return `expected a list, got ${show(value)}`;
    const got = value.map(key).sort();
    return got.length === wanted.length && got.every((item, index) => item === wanted[index])
      ? null
      : `expected ${show(expected)} in any order, got ${show(value)}`;
  };
}

/** All checks pass. */
export function allOf(...checks: ArgCheck[]): ArgCheck {
  return (value) => {
    for (const check of checks) {
      const problem = check(value);
      if (problem !== null) return problem;
    }
    return null;
  };
}

/**
 * The terminal call is `tool` (or one of them) and each named argument passes its check.
 * @example expectCall(call, "report_weather", { city: sameText("Lisbon"), summary: mentions("18", "rain") })
 */
export function expectCall(
  call: TerminalCall,
  tool: string | readonly string[],
  checks: Record<string, ArgCheck>,
): string | null {
  const tools = typeof tool === "string" ? [tool] : tool;
  if (!tools.includes(call.tool)) return `ended with ${call.tool}, expected ${tools.join(" or ")}`;
  for (const [name, check] of Object.entries(checks)) {
    const problem = check(call.args[name]);
    if (problem !== null) return `${call.tool}.${name}: ${problem}`;
  }
  return null;
}

/** Deep JSON equality with a numeric tolerance. */
export function sameJson(left: unknown, right: unknown): boolean {
  if (typeof left === "number" && typeof right === "number") return Math.abs(left - right) < 1e-9;
  if (Array.isArray(left) || Array.isArray(right)) {
    return (
      Array.isArray(left) &&
      Array.isArray(right) &&
      left.length === right.length &&
      left.every((item, index) => sameJson(item, right[index]))
    );
  }
  if (typeof left === "object" && left !== null && typeof right === "object" && right !== null) {
    const leftKeys = Object.keys(left).filter((key) => (left as Record<string, unknown>)[key] !== undefined);
    const rightKeys = Object.keys(right).filter(
      (key) => (right as Record<string, unknown>)[key] !== undefined,
    );
    return (
      leftKeys.length === rightKeys.length &&
      leftKeys.every((key) =>
        sameJson((left as Record<string, unknown>)[key], (right as Record<string, unknown>)[key]),
      )
    );
  }
  return left === right;
}
