/**
 * Read parsed JSON as tool calls: `{"tool","args"}`, `{"name","arguments"|"parameters"}`, and arrays of them.
 */
import type { ToolCall } from "../../core/types.ts";
import { tryParseJson } from "./json-scan.ts";

/**
 * What a JSON value is, read as tool calls.
 *
 * `calls`: one call, or an array whose every element is a call.
 * `invalid`: it is shaped like a call but cannot be one (args not an object, a mixed array, …).
 * `not-a-call`: ordinary data, such as an object without a `tool`/`name` key.
 */
export type CallReading =
  | { kind: "calls"; calls: ToolCall[] }
  | { kind: "invalid"; reason: string }
  | { kind: "not-a-call" };

const ARGS_KEYS = ["args", "arguments", "parameters"] as const;
/** Keys a call object may carry besides its name and args (OpenAI-style ids and types). */
const IGNORED_KEYS = new Set(["tool", "name", "id", "type"]);

const NOT_A_CALL: CallReading = { kind: "not-a-call" };

/**
 * Read a parsed JSON value as tool calls.
 *
 * The name comes from `tool` (preferred) or `name`; args from `args`, `arguments` or `parameters`,
 * which may be an object or a JSON string holding an object (as OpenAI's wire format sends them).
 * A call without an args key has empty args, unless it has other keys: flattened arguments
 * (`{"name": "get_weather", "city": "Paris"}`) are data, not a call. An OpenAI-style
 * `{"type": "function", "function": {...}}` wrapper is unwrapped.
 * @example
 * readToolCalls({ name: "get_weather", arguments: '{"city":"Paris"}' })
 * // { kind: "calls", calls: [{ tool: "get_weather", args: { city: "Paris" } }] }
 */
export function readToolCalls(value: unknown): CallReading {
  if (!Array.isArray(value)) return readCall(value);
  if (value.length === 0) return NOT_A_CALL;
  const readings = value.map(readCall);
  const calls = readings.flatMap((reading) => (reading.kind === "calls" ? reading.calls : []));
  if (calls.length === value.length) return { kind: "calls", calls };
  if (readings.every((reading) => reading.kind === "not-a-call")) return NOT_A_CALL;
  const invalid = readings.find((reading) => reading.kind === "invalid");
  return {
    kind: "invalid",
    reason: invalid?.kind === "invalid" ? invalid.reason : "an array mixes tool calls with other values",
  };
}

/** True for a JSON object (not an array, not null). */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function readCall(value: unknown): CallReading {
  if (!isJsonObject(value)) return NOT_A_CALL;
  const tool =
    typeof value.tool === "string" ? value.tool : typeof value.name === "string" ? value.name : null;
  if (tool === null) {
    return isJsonObject(value.function) && !("tool" in value) && !("name" in value)
      ? readCall(value.function)
      : NOT_A_CALL;
  }
  if (tool.trim().length === 0) return { kind: "invalid", reason: "a tool call has an empty name" };
  const argsKey = ARGS_KEYS.find((key) => Object.hasOwn(value, key));
  if (argsKey === undefined) {
    const extraKeys = Object.keys(value).filter((key) => !IGNORED_KEYS.has(key));
    return extraKeys.length === 0 ? { kind: "calls", calls: [{ tool, args: {} }] } : NOT_A_CALL;
  }
  const args = readArgs(value[argsKey]);
  if (args === null) {
    return { kind: "invalid", reason: `the ${argsKey} of '${tool}' are not a JSON object` };
  }
  return { kind: "calls", calls: [{ tool, args }] };
}

/** Args as an object: an object as-is, or a JSON string that parses to an object. Anything else: null. */
function readArgs(raw: unknown): Record<string, unknown> | null {
  if (isJsonObject(raw)) return raw;
  if (typeof raw !== "string") return null;
  const parsed = tryParseJson(raw);
  return parsed.ok && isJsonObject(parsed.value) ? parsed.value : null;
}
