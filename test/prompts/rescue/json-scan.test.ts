import { describe, expect, it } from "vitest";
import { matchBracket, scanJson } from "../../../src/prompts/rescue/json-scan.ts";

describe("matchBracket", () => {
  it("skips brackets inside strings and escaped quotes", () => {
    const text = '{"a": "}\\"{", "b": [1, {"c": "]"}]} tail';
    expect(matchBracket(text, 0)).toEqual({ end: text.indexOf(" tail") });
  });

  it("reports every opener left open when the text ends", () => {
    expect(matchBracket('{"a": {"b": [1', 0)).toEqual({ unclosed: [0, 6, 12] });
  });

  it("reports the openers left open at a mismatched closer", () => {
    expect(matchBracket('{"a": [1}', 0)).toEqual({ unclosed: [0, 6] });
  });
});

describe("scanJson", () => {
  it("finds objects in prose, parsed", () => {
    const candidates = scanJson('Sure! {"tool": "x", "args": {}} and [1, 2]. Bye');
    expect(candidates).toEqual([
      { start: 6, end: 31, valid: true, value: { tool: "x", args: {} } },
      { start: 36, end: 42, valid: true, value: [1, 2] },
    ]);
  });

  it("finds a valid object after a stray unclosed brace", () => {
    const candidates = scanJson('oops :-{ here {"a": 1}');
    expect(candidates.filter((candidate) => candidate.valid)).toEqual([
      { start: 14, end: 22, valid: true, value: { a: 1 } },
    ]);
  });

  it("reports a balanced span that is not JSON as invalid without looking inside it", () => {
    expect(scanJson("{'a': {\"b\": 1}}")).toEqual([{ start: 0, end: 15, valid: false }]);
  });

  it("stays fast on prose full of unclosed braces", () => {
    const text = `${"{[".repeat(50_000)}{"a": 1}`;
    const started = performance.now();
    const candidates = scanJson(text);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(candidates.some((candidate) => candidate.valid)).toBe(true);
  });
});
