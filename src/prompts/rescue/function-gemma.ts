/**
 * Rescue FunctionGemma calls: `<start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call>`
 * (and Gemma 4's `<|tool_call>call:name{k:<|"|>v<|"|>}<tool_call|>`).
 */

import type { ToolCall } from "../../core/types.ts";
import { ABSENT, found, garbled, type RescueContext, type RescueOutcome } from "./outcome.ts";
import { MAX_DEPTH, type Read, readName, setOwn, skipSpace } from "./python-literal.ts";

/** Each dialect: its call tokens and its string delimiter. */
const DIALECTS = [
  { open: "<start_function_call>", close: "<end_function_call>", quote: "<escape>" },
  { open: "<|tool_call>", close: "<tool_call|>", quote: '<|"|>' },
] as const;
const CALL = "call:";
/** A `call:` that starts the text or a line (tokens stripped by the server), before a known name. */
const BARE_CALL = /(?:^|\n)[ \t]*call:/g;
const CONSTANTS: Readonly<Record<string, unknown>> = { true: true, false: false, null: null };
const NUMBER = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/**
 * Rescue every FunctionGemma call in `text`, in order.
 *
 * A call is `call:name{key:value,…}` after the start token, up to the end token (or, cut off, the
 * next start token or the end). Values: strings between `<escape>` tokens (`<|"|>` in Gemma 4),
 * numbers, `true`/`false`/`null`, `{…}` objects and `[…]` lists. A value that is none of these is
 * read as bare text up to the next `,`, `}` or `]` (a server that drops special tokens drops the
 * `<escape>`s too). Without tokens, `call:name{…}` starting a line counts only for a name in
 * `context.toolNames`. A call that cannot be read makes the text `garbled`.
 * @example
 * parseFunctionGemma('<start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call>')
 * // { status: "found", calls: [{ tool: "get_weather", args: { city: "Paris" } }] }
 */
export function parseFunctionGemma(text: string, context: RescueContext = {}): RescueOutcome {
  for (const dialect of DIALECTS) {
    if (text.includes(dialect.open)) return readTagged(text, dialect);
  }
  return readBare(text, new Set(context.toolNames ?? []));
}

type Dialect = (typeof DIALECTS)[number];

function readTagged(text: string, dialect: Dialect): RescueOutcome {
  const calls: ToolCall[] = [];
  let position = text.indexOf(dialect.open);
  while (position !== -1) {
    const bodyStart = skipSpace(text, position + dialect.open.length);
    const nextOpen = text.indexOf(dialect.open, bodyStart);
    if (!text.startsWith(CALL, bodyStart)) return garbled(`${dialect.open} is not followed by call:`);
    const call = readGemmaCall(text, bodyStart + CALL.length, dialect.quote);
    if (!call.ok) return garbled(`a FunctionGemma call cannot be read: ${call.reason}`);
    const after = skipSpace(text, call.end);
    const endsWell = after >= text.length || text.startsWith(dialect.close, after) || after === nextOpen;
    if (!endsWell) return garbled(`text follows a FunctionGemma call before ${dialect.close}`);
    calls.push(call.value);
    position = nextOpen;
  }
  return found(calls);
}

function readBare(text: string, known: ReadonlySet<string>): RescueOutcome {
  if (known.size === 0 || !text.includes(CALL)) return ABSENT;
  const calls: ToolCall[] = [];
  const bare = new RegExp(BARE_CALL);
  for (let match = bare.exec(text); match !== null; match = bare.exec(text)) {
    const nameAt = match.index + match[0].length;
    const head = readName(text, nameAt);
    if (head === null || !known.has(head.name) || text[skipSpace(text, head.end)] !== "{") continue;
    const quote = text.includes(DIALECTS[1].quote) ? DIALECTS[1].quote : DIALECTS[0].quote;
    const call = readGemmaCall(text, nameAt, quote);
    if (!call.ok) return garbled(`a FunctionGemma call cannot be read: ${call.reason}`);
    calls.push(call.value);
    bare.lastIndex = call.end;
  }
  return found(calls);
}

/** `name{key:value,…}` at `index` (after `call:`). */
function readGemmaCall(text: string, index: number, quote: string): Read<ToolCall> {
  const head = readName(text, index);
  if (head === null) return { ok: false, reason: "call: is not followed by a name" };
  const open = skipSpace(text, head.end);
  if (text[open] !== "{") return { ok: false, reason: `'${head.name}' is not followed by '{'` };
  const args = readObject(text, open, quote);
  if (!args.ok) return { ok: false, reason: `the arguments of '${head.name}': ${args.reason}` };
  return { ok: true, value: { tool: head.name, args: args.value }, end: args.end };
}

function readObject(text: string, index: number, quote: string, depth = 0): Read<Record<string, unknown>> {
  if (depth > MAX_DEPTH) return { ok: false, reason: `values nest deeper than ${MAX_DEPTH}` };
  const object: Record<string, unknown> = {};
  let position = skipSpace(text, index + 1);
  while (text[position] !== "}") {
    if (position >= text.length) return { ok: false, reason: "a '{' never closes" };
    const key = text.startsWith(quote, position)
      ? readQuoted(text, position, quote)
      : readKey(text, position);
    if (!key.ok) return key;
    position = skipSpace(text, key.end);
    if (text[position] !== ":") return { ok: false, reason: `the key '${key.value}' is not followed by ':'` };
    const value = readValue(text, skipSpace(text, position + 1), quote, depth + 1);
    if (!value.ok) return value;
    setOwn(object, key.value, value.value);
    position = skipSpace(text, value.end);
    if (text[position] === ",") position = skipSpace(text, position + 1);
    else if (text[position] !== "}") return { ok: false, reason: "entries are not separated by ','" };
  }
  return { ok: true, value: object, end: position + 1 };
}

function readList(text: string, index: number, quote: string, depth: number): Read<unknown[]> {
  if (depth > MAX_DEPTH) return { ok: false, reason: `values nest deeper than ${MAX_DEPTH}` };
  const items: unknown[] = [];
  let position = skipSpace(text, index + 1);
  while (text[position] !== "]") {
    if (position >= text.length) return { ok: false, reason: "a '[' never closes" };
    const item = readValue(text, position, quote, depth + 1);
    if (!item.ok) return item;
    items.push(item.value);
    position = skipSpace(text, item.end);
    if (text[position] === ",") position = skipSpace(text, position + 1);
    else if (text[position] !== "]") return { ok: false, reason: "items are not separated by ','" };
  }
  return { ok: true, value: items, end: position + 1 };
}

function readValue(text: string, index: number, quote: string, depth: number): Read<unknown> {
  if (text.startsWith(quote, index)) return readQuoted(text, index, quote);
  if (text[index] === "{") return readObject(text, index, quote, depth);
  if (text[index] === "[") return readList(text, index, quote, depth);
  // A bare token: a number or constant, else text (its <escape>s were dropped).
  let end = index;
  while (end < text.length && !/[,}\]]/.test(text[end] ?? "")) end++;
  const token = text.slice(index, end).trim();
  if (end >= text.length) return { ok: false, reason: "a value never ends" };
  if (token.length === 0) return { ok: false, reason: "a value is missing" };
  if (Object.hasOwn(CONSTANTS, token)) return { ok: true, value: CONSTANTS[token], end };
  if (NUMBER.test(token)) return { ok: true, value: Number(token), end };
  return { ok: true, value: token, end };
}

function readQuoted(text: string, index: number, quote: string): Read<string> {
  const start = index + quote.length;
  const close = text.indexOf(quote, start);
  if (close === -1) return { ok: false, reason: `a ${quote} string never closes` };
  return { ok: true, value: text.slice(start, close), end: close + quote.length };
}

function readKey(text: string, index: number): Read<string> {
  const match = /[A-Za-z0-9_.$-]+/y;
  match.lastIndex = index;
  const key = match.exec(text)?.[0];
  return key === undefined
    ? { ok: false, reason: "a key is missing" }
    : { ok: true, value: key, end: index + key.length };
}
