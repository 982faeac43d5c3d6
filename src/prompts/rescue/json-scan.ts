/**
 * Find JSON objects and arrays embedded in prose by matching brackets, respecting strings and escapes.
 */

/** A bracketed span of text: its parsed value when the span is valid JSON. */
export type JsonCandidate =
  | { start: number; end: number; valid: true; value: unknown }
  | { start: number; end: number; valid: false };

/** The result of `matchBracket`: the span's end, or the openers (this one included) that can never close. */
export type BracketMatch = { end: number } | { unclosed: number[] };

const CLOSER: Readonly<Record<string, string>> = { "{": "}", "[": "]" };

/**
 * Match the `{` or `[` at `start` with its closer, skipping brackets inside double-quoted strings.
 *
 * Returns the index just past the closer, or — when the text ends first or a closer of the wrong kind
 * comes — every opener still open at that point: none of them can start valid JSON, because the
 * string state seen from each of them is the same as from `start`.
 */
export function matchBracket(text: string, start: number): BracketMatch {
  const stack: number[] = [];
  let inString = false;
  for (let index = start; index < text.length; index++) {
    const char = text[index];
    if (inString) {
      if (char === "\\") index++;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') {
      inString = true;
    } else if (char === "{" || char === "[") {
      stack.push(index);
    } else if (char === "}" || char === "]") {
      const opener = stack.pop();
      if (opener === undefined) return { unclosed: [] };
      if (CLOSER[text[opener] ?? ""] !== char) return { unclosed: [...stack, opener] };
      if (stack.length === 0) return { end: index + 1 };
    }
  }
  return { unclosed: stack };
}

/** `JSON.parse` that reports failure instead of throwing. Strict JSON: no comments, no trailing commas. */
export function tryParseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/**
 * Every outermost bracketed span of `text`, left to right, parsed when it is valid JSON.
 *
 * A span that never closes (truncated output, a stray brace in prose) is reported as invalid and
 * runs to the end of the text; scanning goes on after its opener, so a valid object later in the
 * text is still found. Each position is scanned a bounded number of times, so prose full of stray
 * braces costs linear-ish time, not quadratic.
 * @example
 * scanJson('Sure! {"tool": "x", "args": {}} Bye') // [{ start: 6, end: 31, valid: true, value: {...} }]
 */
export function scanJson(text: string): JsonCandidate[] {
  const candidates: JsonCandidate[] = [];
  const dead = new Set<number>();
  let index = 0;
  while (index < text.length) {
    const char = text[index];
    if ((char !== "{" && char !== "[") || dead.has(index)) {
      index++;
      continue;
    }
    const match = matchBracket(text, index);
    if ("end" in match) {
      const parsed = tryParseJson(text.slice(index, match.end));
      candidates.push(
        parsed.ok
          ? { start: index, end: match.end, valid: true, value: parsed.value }
          : { start: index, end: match.end, valid: false },
      );
      index = match.end;
    } else {
      for (const opener of match.unclosed) dead.add(opener);
      candidates.push({ start: index, end: text.length, valid: false });
      index++;
    }
  }
  return candidates;
}

/** Skip whitespace from `index`; returns the first non-whitespace index (or the text's length). */
export function skipWhitespace(text: string, index: number): number {
  let position = index;
  while (position < text.length && /\s/.test(text[position] ?? "")) position++;
  return position;
}
