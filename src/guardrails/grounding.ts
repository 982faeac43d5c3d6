/**
 * Invented calls (docs/decisions/041-grounded-calls.md): given tools that cannot answer the
 * question, a small model calls one anyway and fills its arguments with values the conversation
 * never mentions (`get_current_weather({ location: "San Francisco" })` for "Do you have red shoes
 * in size 8?"), or fills the one value the question gave and makes the rest up
 * (`calculateFinalPrice({ price: 100, discount_rate: 25 })` for "the final price after a 25%
 * discount"). A call is **invented** when a required argument's value appears nowhere in what the
 * user, the system prompt or a tool result said, or when it has values to check and none of them
 * is found there. Values a schema spells out (enum members, defaults, a number the argument's
 * description lists: `2` for "1 for cleaning, 2 for ironing") and booleans say nothing either way
 * and are skipped.
 */

import type { Message } from "../core/messages.ts";
import { type JsonSchema, type ToolSpec, toolJsonSchema } from "../core/tools.ts";
import type { ToolCall } from "../core/types.ts";

/** What a conversation said, normalised once for {@link isInventedCall}. */
export interface GroundingEvidence {
  /** Lower-case words and numbers of the conversation, space-separated and space-padded. */
  readonly text: string;
}

/**
 * The words and numbers of the messages a call's values may come from: system, user and tool
 * messages. Number words count as their digits ("two nights" holds `2`), and a month named beside
 * a day as its number ("April 1st" holds `4`), so the dates and counts a model writes in digits
 * are found.
 */
export function groundingEvidence(messages: readonly Message[]): GroundingEvidence {
  const said = messages
    .filter((message) => message.role !== "assistant")
    .map((message) => message.content)
    .join("\n");
  const words = normalise(said);
  const digits = [
    ...[...words.matchAll(NUMBER_WORD)].map((match) => NUMBER_WORDS[match[1] as string]),
    ...[...words.matchAll(DATED_MONTH)].map((match) => MONTHS[(match[1] ?? match[2]) as string]),
  ];
  return { text: ` ${[words, ...digits].join(" ")} ` };
}

const NUMBER_WORDS: Record<string, number> = Object.fromEntries(
  "one two three four five six seven eight nine ten eleven twelve"
    .split(" ")
    .map((word, index) => [word, index + 1]),
);
const NUMBER_WORD = new RegExp(`(?<=^| )(${Object.keys(NUMBER_WORDS).join("|")})(?= |$)`, "g");
const MONTHS: Record<string, number> = Object.fromEntries(
  "january february march april may june july august september october november december"
    .split(" ")
    .flatMap((month, index) => [
      [month, index + 1],
      [month.slice(0, 3), index + 1],
    ]),
);
const MONTH_NAMES = Object.keys(MONTHS).join("|");
/** A month name with a day number after it ("april 1") or before it ("10 th december", "3 of may"). */
const DATED_MONTH = new RegExp(
  `(?<=^| )(?:(${MONTH_NAMES}) \\d{1,2}(?= |$)|\\d{1,2} (?:st |nd |rd |th )?(?:of )?(${MONTH_NAMES})(?= |$))`,
  "g",
);

/**
 * Whether the model made `call`'s arguments up: a required argument (by `spec`'s schema) has
 * values to check and none is in `evidence`, or every value of the call that could be checked is
 * missing from it (and there was at least one).
 * @example
 * isInventedCall({ tool: "get_weather", args: { city: "Paris" } }, spec, groundingEvidence(messages));
 */
export function isInventedCall(
  call: ToolCall,
  spec: ToolSpec | undefined,
  evidence: GroundingEvidence,
): boolean {
  const schema = spec ? toolJsonSchema(spec) : undefined;
  const spelled = schema ? schemaValues(schema) : new Set<string>();
  const properties = (schema?.properties ?? {}) as Record<string, JsonSchema>;
  const required = Array.isArray(schema?.required) ? (schema.required as string[]) : [];
  let checked = 0;
  let grounded = false;
  for (const [name, value] of Object.entries(call.args)) {
    const description = properties[name]?.description;
    const codes = typeof description === "string" ? listedCodes(description) : NO_CODES;
    let argChecked = 0;
    let argGrounded = false;
    for (const leaf of leaves(value)) {
      const words = valueWords(leaf);
      if (words === null || spelled.has(words) || codes.has(words)) continue;
      argChecked += 1;
      if (isGrounded(words, evidence)) argGrounded = true;
    }
    if (argChecked > 0 && !argGrounded && required.includes(name)) return true;
    checked += argChecked;
    grounded ||= argGrounded;
  }
  return checked > 0 && !grounded;
}

/**
 * The numbers an argument's description lists, as in "'2' represents an ironing service" or "1 for
 * cleaning": chosen from the schema like an enum member. A number the description names as a
 * bound ("ranging from 0 to 255", "between 1 and 10", "at most 10", "1-5") is not: any value may
 * sit inside it. A text example ("e.g. San Francisco, CA") is not either: it is what an invented
 * call copies.
 */
function listedCodes(description: string): Set<string> {
  const numbers = normalise(description)
    .split(" ")
    .filter((word) => NUMBER.test(word));
  return new Set(numbers.filter((number) => !isBound(number, description)));
}

const NO_CODES: ReadonlySet<string> = new Set();

/** Whether `description` names `number` as a bound of a range ("from 0 to 255", "at most 10", "1-5"). */
function isBound(number: string, description: string): boolean {
  const escaped = number.replace(".", "\\.");
  return new RegExp(
    `(?:\\b(?:from|to|between|than|least|most|max|maximum|min|minimum)\\s+'?${escaped}(?![\\d.])|\\bbetween\\s+'?-?[\\d.]+'?\\s+and\\s+'?${escaped}(?![\\d.])|(?<![\\d.])${escaped}'?\\s*(?:-|–|to|and)\\s*'?-?\\d)`,
    "i",
  ).test(description);
}

/** A value's normalised words, or null for what says nothing (booleans, null, empty text). */
function valueWords(value: unknown): string | null {
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : null;
  if (typeof value !== "string") return null;
  const words = normalise(value);
  return words.length > 0 ? words : null;
}

/**
 * Found in the evidence: a number as it is written (or as a percentage of it: 0.25 for "25%"), a
 * text when at least half its words are, or one distinctive word (five letters or more, or two
 * digits: a name, a path, an id inside a longer command or URL). Words in scripts written without
 * spaces (Chinese, Japanese) are looked for anywhere in the text.
 */
function isGrounded(words: string, evidence: GroundingEvidence): boolean {
  const tokens = words.split(" ");
  const found = tokens.filter((token) =>
    UNSPACED.test(token) ? evidence.text.includes(token) : evidence.text.includes(` ${token} `),
  );
  if (found.length * 2 >= tokens.length || found.some(isDistinctive)) return true;
  const number = Number(words);
  if (tokens.length === 1 && Number.isFinite(number) && Math.abs(number) < 1 && number !== 0) {
    return evidence.text.includes(` ${String(Math.round(number * 10_000) / 100)} `);
  }
  return false;
}

/** Letters of scripts written without spaces between words. */
const UNSPACED = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}]/u;

function isDistinctive(token: string): boolean {
  return token.length >= 5 || (token.match(/\d/g)?.length ?? 0) >= 2;
}

/**
 * Lower case, digit groups joined (`12,000` → `12000`), numbers apart from the letters they touch
 * (`440Hz` → `440 hz`), every run of other characters one space; a decimal point between digits
 * and a minus before one are kept.
 */
function normalise(text: string): string {
  const spaced = text
    .toLowerCase()
    .replace(/(\p{L})(?=\d)|(\d)(?=\p{L})/gu, "$1$2 ")
    .replace(/(\d),(?=\d{3}\b)/g, "$1");
  // A number is its value: `03` in a date is the `3` of "May 3rd".
  return (spaced.match(WORD) ?? [])
    .map((word) => (NUMBER.test(word) ? String(Number(word)) : word))
    .join(" ");
}

/** A number (a minus sign before it when nothing but a separator precedes, a decimal part), or a run of letters and digits. */
const WORD = /(?<![\p{L}\p{N}.])-?\d+(?:\.\d+)?|[\p{L}\p{N}]+/gu;
const NUMBER = /^-?\d+(?:\.\d+)?$/;

/** Every enum member and default a schema spells out, normalised. */
function schemaValues(schema: JsonSchema): Set<string> {
  const values = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item);
      return;
    }
    if (node === null || typeof node !== "object") return;
    const record = node as Record<string, unknown>;
    for (const member of [...(Array.isArray(record.enum) ? record.enum : []), record.default, record.const]) {
      const words = valueWords(member);
      if (words !== null) values.add(words);
    }
    for (const child of Object.values(record)) visit(child);
  };
  visit(schema);
  return values;
}

function* leaves(value: unknown): Generator<unknown> {
  if (Array.isArray(value)) {
    for (const item of value) yield* leaves(item);
  } else if (value !== null && typeof value === "object") {
    for (const item of Object.values(value)) yield* leaves(item);
  } else {
    yield value;
  }
}

/**
 * The values `text` names that no call of `calls` used: its numbers, and its capitalised words past
 * a sentence's first (names: `Wells Fargo`, `Sydney`), normalised as `isInventedCall` reads them.
 * The parallel follow-up asks for one more call while some are left (ADR 026).
 * @example
 * unusedValues("Flights SF to Tokyo on May 3 and Tokyo to Sydney on May 18.", [firstCall]);
 * // ["sydney", "18"] when the first call used SF, Tokyo, May and 3
 */
export function unusedValues(text: string, calls: readonly ToolCall[]): string[] {
  const used = new Set(calls.flatMap((call) => [...callWords(call)]));
  return [...namedValues(text)].filter((word) => !used.has(word));
}

/** The words and numbers of a call's argument values, normalised as `isInventedCall` reads them. */
export function callWords(call: ToolCall): Set<string> {
  const words = new Set<string>();
  for (const value of leaves(call.args)) {
    for (const word of valueWords(value)?.split(" ") ?? []) words.add(word);
  }
  return words;
}

/** The numbers of `text`, and its capitalised words past a sentence's first, normalised. */
function namedValues(text: string): Set<string> {
  const named = new Set<string>();
  for (const word of normalise(text).split(" ")) if (/\d/.test(word)) named.add(word);
  for (const sentence of text.split(/[.!?\n]\s+/)) {
    for (const match of sentence.matchAll(/(?<=\s)\p{Lu}[\p{L}\p{N}]{2,}/gu)) named.add(normalise(match[0]));
  }
  named.delete("");
  return named;
}
