/**
 * Tool parameters for node-llama-cpp's grammar: JSON Schema (as zod emits it, or as it came over
 * the wire) narrowed to the subset the grammar generator understands, and the way back from what
 * the grammar produced to arguments the tool's zod schema accepts.
 */
import type { ChatModelFunctions, GbnfJsonSchema } from "node-llama-cpp";
import { type JsonSchema, type ToolSpec, toolJsonSchema } from "../../core/tools.ts";
import { isPlainObject } from "../wire.ts";

const SCALAR_TYPES = ["string", "number", "integer", "boolean", "null"] as const;
type ScalarType = (typeof SCALAR_TYPES)[number];
const DATE_FORMATS = new Set(["date-time", "time", "date"]);
const DEFS_PREFIX = "#/$defs/";

/** Any JSON value: what the grammar gets for `{}`, `true` and schemas it cannot express. */
const ANY_JSON: GbnfJsonSchema = {
  oneOf: [{ type: [...SCALAR_TYPES] }, { type: "object", additionalProperties: true }, { type: "array" }],
};

/**
 * The `functions` node-llama-cpp constrains calls with, one per tool. The grammar generates every
 * property it is given, so an optional property may be `null` (meaning "left out"); pass the
 * generated arguments through {@link dropOmittedOptionals} before validation.
 */
export function toChatModelFunctions(tools: readonly ToolSpec[]): ChatModelFunctions {
  return Object.fromEntries(
    tools.map((tool) => [
      tool.name,
      { description: tool.description, params: toGbnfSchema(toolJsonSchema(tool)) },
    ]),
  );
}

/**
 * Narrow a JSON Schema to what node-llama-cpp's grammar supports: `anyOf`/`oneOf` become `oneOf`,
 * type lists that mix scalars with objects or arrays are split, `const`/`enum` win over `type`,
 * tuples keep `prefixItems`, `$ref`s into `$defs` are kept, numeric bounds and patterns are
 * dropped (zod still checks them), and anything else becomes "any JSON".
 * @example
 * toGbnfSchema({ type: "object", properties: { city: { type: "string" } }, required: ["city"] })
 * // { type: "object", properties: { city: { type: "string" } }, additionalProperties: false }
 */
export function toGbnfSchema(schema: unknown): GbnfJsonSchema {
  if (!isPlainObject(schema)) return ANY_JSON;
  const converted = convert(schema);
  if (!isPlainObject(schema.$defs) || !("type" in converted || "oneOf" in converted)) return converted;
  const defs = Object.fromEntries(
    Object.entries(schema.$defs).map(([name, def]) => [name, toGbnfSchema(def)]),
  );
  return { ...converted, $defs: defs } as GbnfJsonSchema;
}

function convert(schema: JsonSchema): GbnfJsonSchema {
  const described = typeof schema.description === "string" ? { description: schema.description } : {};
  if (typeof schema.$ref === "string") {
    return schema.$ref.startsWith(DEFS_PREFIX)
      ? ({ $ref: schema.$ref, ...described } as GbnfJsonSchema)
      : ANY_JSON;
  }
  if (isLiteral(schema.const)) return { const: schema.const, ...described };
  if (Array.isArray(schema.enum) && schema.enum.length > 0 && schema.enum.every(isLiteral)) {
    return { enum: schema.enum, ...described };
  }
  const alternatives = Array.isArray(schema.anyOf)
    ? schema.anyOf
    : Array.isArray(schema.oneOf)
      ? schema.oneOf
      : null;
  if (alternatives && alternatives.length > 0) return { oneOf: alternatives.map(toGbnfSchema), ...described };
  if (Array.isArray(schema.allOf) && schema.allOf.length === 1) return toGbnfSchema(schema.allOf[0]);
  const types =
    typeof schema.type === "string" ? [schema.type] : Array.isArray(schema.type) ? schema.type : [];
  const structured = types
    .filter((type) => type === "object" || type === "array")
    .map((type) => (type === "object" ? convertObject(schema, described) : convertArray(schema, described)));
  const scalars = types.filter((type): type is ScalarType =>
    (SCALAR_TYPES as readonly unknown[]).includes(type),
  );
  const scalar = scalars.length > 0 ? convertScalars(schema, scalars, described) : null;
  const parts = scalar ? [scalar, ...structured] : structured;
  if (parts.length === 0) return ANY_JSON;
  return parts.length === 1 ? (parts[0] as GbnfJsonSchema) : { oneOf: parts, ...described };
}

function convertScalars(schema: JsonSchema, types: ScalarType[], described: object): GbnfJsonSchema {
  if (types.length === 1 && types[0] === "string") {
    if (typeof schema.format === "string" && DATE_FORMATS.has(schema.format)) {
      return { type: "string", format: schema.format as "date-time" | "time" | "date", ...described };
    }
    const minLength = typeof schema.minLength === "number" ? { minLength: schema.minLength } : {};
    const maxLength = typeof schema.maxLength === "number" ? { maxLength: schema.maxLength } : {};
    return { type: "string", ...minLength, ...maxLength, ...described };
  }
  return { type: types.length === 1 ? (types[0] as ScalarType) : types, ...described };
}

function convertObject(schema: JsonSchema, described: object): GbnfJsonSchema {
  const properties = isPlainObject(schema.properties) ? schema.properties : null;
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const extra = schema.additionalProperties;
  // Declared properties alone mean a closed object (zod strips the rest); no properties, a free-form one.
  const additionalProperties =
    extra === undefined
      ? properties === null || Object.keys(properties).length === 0
      : extra === true
        ? true
        : extra === false
          ? false
          : toGbnfSchema(extra);
  const converted = Object.fromEntries(
    Object.entries(properties ?? {}).map(([key, value]) => {
      const property = toGbnfSchema(value);
      return [
        key,
        required.has(key) || acceptsNull(property) ? property : { oneOf: [property, { type: "null" }] },
      ];
    }),
  );
  return {
    type: "object",
    ...(properties && { properties: converted }),
    additionalProperties,
    ...numberField(schema, "minProperties"),
    ...numberField(schema, "maxProperties"),
    ...described,
  } as GbnfJsonSchema;
}

function convertArray(schema: JsonSchema, described: object): GbnfJsonSchema {
  const prefixItems = Array.isArray(schema.prefixItems) ? schema.prefixItems.map(toGbnfSchema) : undefined;
  const closedTuple = prefixItems !== undefined && schema.items === false;
  const items = isPlainObject(schema.items) ? { items: toGbnfSchema(schema.items) } : {};
  return {
    type: "array",
    ...(prefixItems && { prefixItems }),
    ...items,
    ...numberField(schema, "minItems"),
    ...(closedTuple ? { maxItems: prefixItems.length } : numberField(schema, "maxItems")),
    ...described,
  } as GbnfJsonSchema;
}

/**
 * Remove the `null`s the grammar wrote for optional properties that do not accept `null`, walking
 * nested objects and arrays alongside `schema` (the tool's JSON Schema), so zod sees them as left
 * out. The input is not mutated.
 * @example
 * dropOmittedOptionals({ city: "Paris", days: null }, { type: "object", properties: { city: {}, days: { type: "integer" } }, required: ["city"] })
 * // { city: "Paris" }
 */
export function dropOmittedOptionals(value: unknown, schema: unknown): unknown {
  if (!isPlainObject(schema)) return value;
  if (Array.isArray(value)) {
    const prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems : [];
    return value.map((item, index) =>
      dropOmittedOptionals(item, index < prefix.length ? prefix[index] : schema.items),
    );
  }
  if (!isPlainObject(value) || !isPlainObject(schema.properties)) return value;
  const properties = schema.properties;
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const result: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    const property = properties[key];
    if (item === null && property !== undefined && !required.has(key) && !acceptsNull(toGbnfSchema(property)))
      continue;
    result[key] = dropOmittedOptionals(item, property);
  }
  return result;
}

function acceptsNull(schema: GbnfJsonSchema): boolean {
  if ("const" in schema) return schema.const === null;
  if ("enum" in schema) return schema.enum.includes(null);
  if ("oneOf" in schema) return schema.oneOf.some(acceptsNull);
  if ("type" in schema)
    return schema.type === "null" || (Array.isArray(schema.type) && schema.type.includes("null"));
  return false;
}

function isLiteral(value: unknown): value is string | number | boolean | null {
  return value === null || ["string", "number", "boolean"].includes(typeof value);
}

function numberField(schema: JsonSchema, key: string): Record<string, number> {
  const value = schema[key];
  return typeof value === "number" ? { [key]: value } : {};
}
