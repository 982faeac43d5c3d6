/**
 * Read pythonic tool calls — `get_weather(city="Paris", days=3)` — and the Python literals of
 * their arguments, without evaluating anything.
 */
import type { ToolCall } from "../../core/types.ts";

/** A value read at a position: the value and the index just past it, or why it cannot be read. */
export type Read<T> = { ok: true; value: T; end: number } | { ok: false; reason: string };

/** A tool name as models write it in a call: an identifier, dots and dashes allowed (`functions.x`). */
const NAME = /[A-Za-z_][A-Za-z0-9_.-]*/y;
const NUMBER =
  /[+-]?(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d+)?)/y;
const KEYWORD = /[A-Za-z_][A-Za-z0-9_]*/y;
/** The deepest nesting of lists and dicts read (the proxy refuses JSON bodies deeper than 64). */
export const MAX_DEPTH = 256;
/** Python's constants, and JSON's, which small models mix in. */
const CONSTANTS: Readonly<Record<string, unknown>> = {
  True: true,
  False: false,
  None: null,
  true: true,
  false: false,
  null: null,
};
const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  "\n": "",
  "\\": "\\",
  "'": "'",
  '"': '"',
  a: "\x07",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
  v: "\v",
  "0": "\0",
};

/** Set an own property, also for `__proto__` (an assignment would set the object's prototype). */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function fail<T>(reason: string): Read<T> {
  return { ok: false, reason };
}

/** Skip spaces, tabs and newlines from `index`. */
export function skipSpace(text: string, index: number): number {
  let position = index;
  while (position < text.length && /\s/.test(text[position] ?? "")) position++;
  return position;
}

/** The name at `index` (see NAME), or null. */
export function readName(text: string, index: number): { name: string; end: number } | null {
  const pattern = new RegExp(NAME);
  pattern.lastIndex = index;
  const match = pattern.exec(text);
  return match ? { name: match[0], end: index + match[0].length } : null;
}

/**
 * One call at `index`: a name, `(`, keyword arguments `key=literal` separated by commas (a
 * trailing comma allowed), `)`. Positional arguments, expressions and variables are refused.
 * @example
 * readCall('get_weather(city="Paris", days=3)', 0) // { ok: true, value: { tool: "get_weather", args: { city: "Paris", days: 3 } }, end: 33 }
 */
export function readCall(text: string, index: number): Read<ToolCall> {
  const head = readName(text, index);
  if (head === null) return fail("a call does not start with a name");
  let position = skipSpace(text, head.end);
  if (text[position] !== "(") return fail(`'${head.name}' is not followed by '('`);
  position = skipSpace(text, position + 1);
  const args: Record<string, unknown> = {};
  while (text[position] !== ")") {
    if (position >= text.length) return fail(`the call of '${head.name}' never closes`);
    const keyword = new RegExp(KEYWORD);
    keyword.lastIndex = position;
    const key = keyword.exec(text)?.[0];
    const afterKey = key === undefined ? position : skipSpace(text, position + key.length);
    if (key === undefined || text[afterKey] !== "=" || text[afterKey + 1] === "=") {
      return fail(`'${head.name}' has an argument that is not keyword=value`);
    }
    if (Object.hasOwn(args, key)) return fail(`'${head.name}' repeats the argument '${key}'`);
    const value = readLiteral(text, skipSpace(text, afterKey + 1));
    if (!value.ok) return fail(`the argument '${key}' of '${head.name}': ${value.reason}`);
    setOwn(args, key, value.value);
    position = skipSpace(text, value.end);
    if (text[position] === ",") position = skipSpace(text, position + 1);
    else if (text[position] !== ")") return fail(`'${head.name}' has arguments not separated by ','`);
  }
  return { ok: true, value: { tool: head.name, args }, end: position + 1 };
}

/** `[call, call, …]` at `index` (the `[` included); an empty list is refused. */
export function readCallList(text: string, index: number): Read<ToolCall[]> {
  if (text[index] !== "[") return fail("a call list does not start with '['");
  const calls: ToolCall[] = [];
  let position = skipSpace(text, index + 1);
  while (text[position] !== "]") {
    if (position >= text.length) return fail("the call list never closes");
    const call = readCall(text, position);
    if (!call.ok) return call;
    calls.push(call.value);
    position = skipSpace(text, call.end);
    if (text[position] === ",") position = skipSpace(text, position + 1);
    else if (text[position] !== "]") return fail("calls in a list are not separated by ','");
  }
  if (calls.length === 0) return fail("the call list is empty");
  return { ok: true, value: calls, end: position + 1 };
}

/**
 * One Python literal at `index`: a string (single, double or triple quotes, `r`/`u` prefixes,
 * escapes, adjacent strings joined; a raw newline inside quotes is kept, where Python would refuse), a number, `True`/`False`/`None` (or JSON's spellings), a
 * list or tuple (as an array), or a dict with string or number keys. Nothing is evaluated.
 */
export function readLiteral(text: string, index: number, depth = 0): Read<unknown> {
  const char = text[index];
  if (char === undefined) return fail("a value is missing");
  // Arguments are never this deep; refusing keeps a pathological text from exhausting the stack.
  if (depth > MAX_DEPTH) return fail(`values nest deeper than ${MAX_DEPTH}`);
  if (char === "[" || char === "(") return readSequence(text, index, char === "[" ? "]" : ")", depth);
  if (char === "{") return readDict(text, index, depth);
  const string = readStrings(text, index);
  if (string !== null) return string;
  const number = new RegExp(NUMBER);
  number.lastIndex = index;
  const digits = number.exec(text)?.[0];
  if (digits !== undefined && /\d/.test(digits) && !/[A-Za-z_]/.test(text[index + digits.length] ?? "")) {
    const value = numberOf(digits);
    return Number.isFinite(value) ? { ok: true, value, end: index + digits.length } : fail("a bad number");
  }
  const word = readName(text, index);
  if (word !== null && Object.hasOwn(CONSTANTS, word.name)) {
    return { ok: true, value: CONSTANTS[word.name], end: word.end };
  }
  return fail(`'${text.slice(index, index + 20)}' is not a literal`);
}

function numberOf(digits: string): number {
  const plain = digits.replaceAll("_", "");
  const sign = plain.startsWith("-") ? -1 : 1;
  const unsigned = plain.replace(/^[+-]/, "");
  const radix = /^0[xX]/.test(unsigned) ? 16 : /^0[oO]/.test(unsigned) ? 8 : /^0[bB]/.test(unsigned) ? 2 : 10;
  return radix === 10 ? sign * Number(unsigned) : sign * Number.parseInt(unsigned.slice(2), radix);
}

function readSequence(text: string, index: number, close: "]" | ")", depth: number): Read<unknown[]> {
  const items: unknown[] = [];
  let position = skipSpace(text, index + 1);
  while (text[position] !== close) {
    if (position >= text.length) return fail(`a '${text[index]}' never closes`);
    const item = readLiteral(text, position, depth + 1);
    if (!item.ok) return item;
    items.push(item.value);
    position = skipSpace(text, item.end);
    if (text[position] === ",") position = skipSpace(text, position + 1);
    else if (text[position] !== close) return fail(`items are not separated by ','`);
  }
  return { ok: true, value: items, end: position + 1 };
}

function readDict(text: string, index: number, depth: number): Read<Record<string, unknown>> {
  const dict: Record<string, unknown> = {};
  let position = skipSpace(text, index + 1);
  while (text[position] !== "}") {
    if (position >= text.length) return fail("a '{' never closes");
    const key = readLiteral(text, position, depth + 1);
    if (!key.ok) return key;
    if (typeof key.value !== "string" && typeof key.value !== "number") {
      return fail("a dict key is not a string or a number");
    }
    position = skipSpace(text, key.end);
    if (text[position] !== ":") return fail("a dict key is not followed by ':'");
    const value = readLiteral(text, skipSpace(text, position + 1), depth + 1);
    if (!value.ok) return value;
    setOwn(dict, String(key.value), value.value);
    position = skipSpace(text, value.end);
    if (text[position] === ",") position = skipSpace(text, position + 1);
    else if (text[position] !== "}") return fail("dict entries are not separated by ','");
  }
  return { ok: true, value: dict, end: position + 1 };
}

/** One or more adjacent string literals at `index`, joined (`"a" "b"` is `"ab"`); null when none starts there. */
function readStrings(text: string, index: number): Read<string> | null {
  let first = readString(text, index);
  if (first === null) return null;
  let joined = "";
  let end = index;
  while (first !== null) {
    if (!first.ok) return first;
    joined += first.value;
    end = first.end;
    first = readString(text, skipSpace(text, end));
  }
  return { ok: true, value: joined, end };
}

function readString(text: string, index: number): Read<string> | null {
  const prefix = /^[rRuU]?/.exec(text.slice(index, index + 1))?.[0] ?? "";
  const quoteAt = index + prefix.length;
  const quote = text[quoteAt];
  if (quote !== '"' && quote !== "'") return null;
  const raw = prefix.toLowerCase() === "r";
  const delimiter = text.startsWith(quote.repeat(3), quoteAt) ? quote.repeat(3) : quote;
  let value = "";
  let position = quoteAt + delimiter.length;
  while (position < text.length) {
    if (text.startsWith(delimiter, position)) return { ok: true, value, end: position + delimiter.length };
    const char = text[position] ?? "";
    if (char !== "\\") {
      value += char;
      position++;
      continue;
    }
    const next = text[position + 1] ?? "";
    if (raw) {
      value += char + next;
      position += 2;
      continue;
    }
    const escaped = readEscape(text, position + 1);
    value += escaped.value;
    position = escaped.end;
  }
  return fail("a string never closes");
}

/** The escape after a backslash at `index - 1`; an unknown escape keeps its backslash, as Python does. */
function readEscape(text: string, index: number): { value: string; end: number } {
  const char = text[index] ?? "";
  if (Object.hasOwn(SIMPLE_ESCAPES, char)) return { value: SIMPLE_ESCAPES[char] ?? "", end: index + 1 };
  const width = char === "x" ? 2 : char === "u" ? 4 : char === "U" ? 8 : 0;
  const hex = text.slice(index + 1, index + 1 + width);
  if (width > 0 && hex.length === width && /^[0-9a-fA-F]+$/.test(hex)) {
    const code = Number.parseInt(hex, 16);
    if (code <= 0x10ffff) return { value: String.fromCodePoint(code), end: index + 1 + width };
  }
  return { value: `\\${char}`, end: index + 1 };
}
