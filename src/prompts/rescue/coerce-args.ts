/**
 * Turn the text values of a rescued call (Qwen-Coder's `<parameter=k>v</parameter>`) into the
 * types the tool's JSON Schema asks for.
 */
import type { JsonSchema } from "../../core/tools.ts";
import { isJsonObject } from "./call-shape.ts";
import { tryParseJson } from "./json-scan.ts";

/** JSON Schema types a text value can be converted to, in the order they are tried. */
const CONVERTIBLE = ["null", "boolean", "integer", "number", "object", "array"] as const;
type Convertible = (typeof CONVERTIBLE)[number];

const INTEGER = /^[-+]?\d+$/;
const NUMBER = /^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/;

/**
 * Convert each text value of `args` by its property's schema in `schema` (the tool's parameters).
 *
 * A value stays the string the model wrote when there is no schema, when its property is not in
 * the schema, when the property allows strings (`"02134"` keeps its zero), when the schema names no
 * type, or when the text does not read as any type the property allows — the tool's zod schema
 * then rejects it on the tool-error channel, showing the model what it wrote. Otherwise the first
 * of null, boolean, integer, number, object, array that the property allows and the text reads as
 * wins. Types come from `type` (a name or a list), `anyOf`/`oneOf` members, `enum`/`const` values,
 * and a local `$ref` (`#/$defs/…`, `#/definitions/…`).
 * @example
 * coerceTextArgs({ zip: "02134", limit: "10" }, { type: "object", properties: { zip: { type: "string" }, limit: { type: "integer" } } })
 * // { zip: "02134", limit: 10 }
 */
export function coerceTextArgs(
  args: Readonly<Record<string, string>>,
  schema: JsonSchema | undefined,
): Record<string, unknown> {
  const properties = schema !== undefined && isJsonObject(schema.properties) ? schema.properties : {};
  // fromEntries defines own properties, so a "__proto__" key cannot touch the prototype.
  return Object.fromEntries(
    Object.entries(args).map(([key, text]) => {
      const property = Object.hasOwn(properties, key) ? properties[key] : undefined;
      return [key, schema === undefined ? text : coerceText(text, allowedTypes(property, schema, 0))];
    }),
  );
}

function coerceText(text: string, allowed: ReadonlySet<string>): unknown {
  if (allowed.size === 0 || allowed.has("string")) return text;
  const trimmed = text.trim();
  for (const type of CONVERTIBLE) {
    if (!allowed.has(type)) continue;
    const value = convert(trimmed, type);
    if (value !== undefined) return value.value;
  }
  return text;
}

/** The text read as `type`, boxed so that `null` is a result; undefined when it does not read so. */
function convert(text: string, type: Convertible): { value: unknown } | undefined {
  switch (type) {
    case "null":
      return text === "null" ? { value: null } : undefined;
    case "boolean": {
      const lower = text.toLowerCase();
      return lower === "true" || lower === "false" ? { value: lower === "true" } : undefined;
    }
    case "integer": {
      const value = Number(text);
      return INTEGER.test(text) && Number.isSafeInteger(value) ? { value } : undefined;
    }
    case "number": {
      const value = Number(text);
      return NUMBER.test(text) && Number.isFinite(value) ? { value } : undefined;
    }
    case "object":
    case "array": {
      const parsed = tryParseJson(text);
      if (!parsed.ok) return undefined;
      const matches = type === "array" ? Array.isArray(parsed.value) : isJsonObject(parsed.value);
      return matches ? { value: parsed.value } : undefined;
    }
  }
}

/** The JSON types a property schema allows; empty when it does not say. */
function allowedTypes(property: unknown, root: JsonSchema, depth: number): Set<string> {
  const types = new Set<string>();
  if (!isJsonObject(property) || depth > 8) return types;
  if (typeof property.type === "string") types.add(property.type);
  if (Array.isArray(property.type))
    for (const type of property.type) if (typeof type === "string") types.add(type);
  for (const key of ["anyOf", "oneOf"] as const) {
    const members = property[key];
    if (Array.isArray(members)) {
      for (const member of members) for (const type of allowedTypes(member, root, depth + 1)) types.add(type);
    }
  }
  if (types.size === 0) {
    const values = Array.isArray(property.enum) ? property.enum : "const" in property ? [property.const] : [];
    for (const value of values) types.add(jsonTypeOf(value));
  }
  if (types.size === 0 && typeof property.$ref === "string") {
    return allowedTypes(resolveLocalRef(property.$ref, root), root, depth + 1);
  }
  return types;
}

function jsonTypeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

/** The schema a `#/$defs/name` or `#/definitions/name` reference points to, if any. */
function resolveLocalRef(ref: string, root: JsonSchema): unknown {
  const match = /^#\/(\$defs|definitions)\/([^/]+)$/.exec(ref);
  if (!match) return undefined;
  const definitions = root[match[1]!];
  const name = match[2]!.replaceAll("~1", "/").replaceAll("~0", "~");
  return isJsonObject(definitions) && Object.hasOwn(definitions, name) ? definitions[name] : undefined;
}
