/**
 * Boundary checks shared by the clients: every wire payload is parsed and checked against a zod
 * schema before anything reads it, and tool-call arguments are decoded the same way everywhere.
 */
import { prettifyError, type z } from "zod";
import { BackendError, StreamError } from "../core/errors.ts";
import type { ToolCall } from "../core/types.ts";
import { BAD_RESPONSE_STATUS } from "./http.ts";

/**
 * Parse a JSON body and check its shape; a bad body is `BackendError(502)` that keeps the body.
 * `isShape`, a hand-written check that accepts only values the schema accepts, skips zod for the
 * usual well-formed body; zod still checks (and names what is wrong with) everything else.
 */
export function parseWireBody<Schema extends z.ZodType>(
  schema: Schema,
  body: string,
  source: string,
  isShape?: (value: unknown) => value is z.output<Schema>,
): z.output<Schema> {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (error) {
    throw new BackendError(
      BAD_RESPONSE_STATUS,
      body,
      `Malformed JSON from ${source}: ${(error as Error).message}; body: ${body.slice(0, 200)}`,
      { cause: error },
    );
  }
  if (isShape?.(value)) return value;
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new BackendError(
      BAD_RESPONSE_STATUS,
      body,
      `Unexpected response shape from ${source}: ${prettifyError(parsed.error)}`,
      { cause: parsed.error },
    );
  }
  return parsed.data;
}

/** Parse one streamed event (an SSE `data` field or an NDJSON line); a bad one is a `StreamError`. */
export function parseStreamEvent<Schema extends z.ZodType>(
  schema: Schema,
  data: string,
  source: string,
): z.output<Schema> {
  return checkStreamEvent(schema, parseStreamJson(data, source), source);
}

/** The JSON of one streamed event, not yet checked; malformed JSON is a `StreamError`. */
export function parseStreamJson(data: string, source: string): unknown {
  try {
    return JSON.parse(data);
  } catch (error) {
    throw new StreamError(
      `Malformed JSON in the stream from ${source} (${(error as Error).message}): ${data.slice(0, 200)}`,
    );
  }
}

/** Check the shape of an already-parsed streamed event; a bad one is a `StreamError`. */
export function checkStreamEvent<Schema extends z.ZodType>(
  schema: Schema,
  value: unknown,
  source: string,
): z.output<Schema> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new StreamError(
      `Unexpected event shape in the stream from ${source}: ${prettifyError(parsed.error)}; event: ${JSON.stringify(value).slice(0, 200)}`,
    );
  }
  return parsed.data;
}

/**
 * Decode tool-call arguments: a JSON string (OpenAI wire) or an object (Ollama wire). Empty means
 * no arguments. `null` when they are not a JSON object, so the caller can hand the raw output to
 * the loop instead of running a garbled call.
 */
export function decodeArguments(raw: unknown): Record<string, unknown> | null {
  if (raw === undefined || raw === null) return {};
  let value = raw;
  if (typeof raw === "string") {
    if (raw.trim() === "") return {};
    try {
      value = JSON.parse(raw);
    } catch {
      return null;
    }
  }
  return isPlainObject(value) ? value : null;
}

/** True for a JSON object (not an array, not null). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `z.string().nullish()` as a plain check, for the hand-written fast paths of the wire schemas. */
export function isNullishString(value: unknown): value is string | null | undefined {
  return value === undefined || value === null || typeof value === "string";
}

/** `z.number().int().nullish()` as a plain check (safe integers only, which zod accepts too). */
export function isNullishInteger(value: unknown): value is number | null | undefined {
  return value === undefined || value === null || Number.isSafeInteger(value);
}

/**
 * A native tool call from its wire name and arguments. Arguments that are not a JSON object keep
 * the call (so the loop can answer it on the tool channel, as a failing tool) with `args: {}` and
 * `argumentsError` saying what was wrong and what was sent.
 */
export function decodeCall(name: string, raw: unknown): ToolCall {
  const args = decodeArguments(raw);
  if (args !== null) return { tool: name, args };
  return { tool: name, args: {}, argumentsError: describeBadArguments(raw) };
}

function describeBadArguments(raw: unknown): string {
  const text = typeof raw === "string" ? raw : (JSON.stringify(raw) ?? String(raw));
  const excerpt = text.length > 200 ? `${text.slice(0, 200)}…` : text;
  let what = "not a JSON object";
  if (typeof raw === "string") {
    try {
      JSON.parse(raw);
    } catch (error) {
      what = `invalid JSON: ${(error as Error).message}`;
    }
  }
  return `${what}; received ${excerpt}`;
}

/** The text of a wire `content`: a string, or the text parts of a content-part array. */
export function wireText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (isPlainObject(part) && typeof part.text === "string" ? part.text : ""))
      .filter((text) => text.length > 0)
      .join("\n");
  }
  return "";
}

/** Check the shape of a value an SDK already parsed; a bad one is `BackendError(502)` with the value as body. */
export function checkWireValue<Schema extends z.ZodType>(
  schema: Schema,
  value: unknown,
  source: string,
): z.output<Schema> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new BackendError(
      BAD_RESPONSE_STATUS,
      JSON.stringify(value) ?? String(value),
      `Unexpected response shape from ${source}: ${prettifyError(parsed.error)}`,
      { cause: parsed.error },
    );
  }
  return parsed.data;
}
