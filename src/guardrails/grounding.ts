/**
 * Invented calls (docs/decisions/041-grounded-calls.md): given tools that cannot answer the
 * question, a small model calls one anyway and fills its arguments with values the conversation
 * never mentions (`get_current_weather({ location: "San Francisco" })` for "Do you have red shoes
 * in size 8?"). A call is **grounded** when at least one of its argument values appears in what the
 * user, the system prompt or a tool result said; a call with values to check and none of them
 * found is invented. Values a schema spells out (enum members, defaults) and booleans say nothing
 * either way and are skipped.
 */

import type { Message } from "../core/messages.ts";
import { type JsonSchema, type ToolSpec, toolJsonSchema } from "../core/tools.ts";
import type { ToolCall } from "../core/types.ts";

/** What a conversation said, normalised once for {@link isInventedCall}. */
export interface GroundingEvidence {
  /** Lower-case words and numbers of the conversation, space-separated and space-padded. */
  readonly text: string;
}

/** The words and numbers of the messages a call's values may come from: system, user and tool messages. */
export function groundingEvidence(messages: readonly Message[]): GroundingEvidence {
  const said = messages
    .filter((message) => message.role !== "assistant")
    .map((message) => message.content)
    .join("\n");
  return { text: ` ${normalise(said)} ` };
}

/**
 * Whether every value of `call` that could be checked is missing from `evidence` (and there was at
 * least one): the model made the call's arguments up.
 * @example
 * isInventedCall({ tool: "get_weather", args: { city: "Paris" } }, undefined, groundingEvidence(messages));
 */
export function isInventedCall(
  call: ToolCall,
  spec: ToolSpec | undefined,
  evidence: GroundingEvidence,
): boolean {
  const spelled = spec ? schemaValues(toolJsonSchema(spec)) : new Set<string>();
  let checked = 0;
  for (const value of leaves(call.args)) {
    const words = valueWords(value);
    if (words === null || spelled.has(words)) continue;
    checked += 1;
    if (isGrounded(words, evidence)) return false;
  }
  return checked > 0;
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
