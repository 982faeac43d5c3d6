/**
 * The exact call a pending step wants, written out for the model: the tool's name and its
 * required arguments, with the values the model already wrote (in its premature terminal call)
 * where the names match. A small model copies a call it is shown more readily than it follows an
 * instruction to make one (docs/decisions/025). Pure.
 */
import type { JsonSchema } from "../core/tools.ts";

/**
 * `name({"arg": value, …})` for the required properties of `schema` (every property when it
 * requires none): a value from `known` when it has one of that name and the property's type
 * accepts it, else a placeholder, `"<arg>"` for a string and `<arg>` for anything else.
 * @example
 * callShape("lookup_order_status", { type: "object", properties: { order_id: { type: "string" } }, required: ["order_id"] }, { order_id: "A-1042", status: "?" })
 * // 'lookup_order_status({"order_id": "A-1042"})'
 */
export function callShape(
  name: string,
  schema: JsonSchema,
  known: Readonly<Record<string, unknown>>,
): string {
  const properties = isPlainObject(schema.properties) ? schema.properties : {};
  const required = Array.isArray(schema.required)
    ? schema.required.filter((key): key is string => typeof key === "string")
    : [];
  const keys = required.length > 0 ? required : Object.keys(properties);
  const fields = keys.map((key) => {
    const property = properties[key];
    const value = known[key];
    const written =
      value !== undefined && fitsType(value, property) ? JSON.stringify(value) : placeholder(key, property);
    return `${JSON.stringify(key)}: ${written}`;
  });
  return `${name}({${fields.join(", ")}})`;
}

function placeholder(key: string, property: unknown): string {
  return typesOf(property).includes("string") ? `"<${key}>"` : `<${key}>`;
}

/** Whether `value` is of a type `property` declares (any value when it declares none). */
function fitsType(value: unknown, property: unknown): boolean {
  const types = typesOf(property);
  if (types.length === 0) return true;
  return types.some((type) => {
    switch (type) {
      case "string":
        return typeof value === "string";
      case "integer":
        return Number.isInteger(value);
      case "number":
        return typeof value === "number";
      case "boolean":
        return typeof value === "boolean";
      case "null":
        return value === null;
      case "array":
        return Array.isArray(value);
      case "object":
        return isPlainObject(value);
      default:
        return false;
    }
  });
}

function typesOf(property: unknown): string[] {
  if (!isPlainObject(property)) return [];
  if (typeof property.type === "string") return [property.type];
  return Array.isArray(property.type) ? property.type.filter((type) => typeof type === "string") : [];
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
