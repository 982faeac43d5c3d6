import { describe, expect, it } from "vitest";
import { coerceTextArgs } from "../../../src/prompts/rescue/coerce-args.ts";

const schema = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  type: "object",
  properties,
  ...extra,
});

describe("coerceTextArgs", () => {
  it("keeps every value a string without a schema", () => {
    expect(coerceTextArgs({ limit: "10", zip: "02134" }, undefined)).toEqual({ limit: "10", zip: "02134" });
  });

  it("keeps a string property a string, leading zero and all", () => {
    expect(
      coerceTextArgs(
        { zip: "02134", code: "  x\n" },
        schema({ zip: { type: "string" }, code: { type: "string" } }),
      ),
    ).toEqual({
      zip: "02134",
      code: "  x\n",
    });
  });

  it("keeps a value whose property is not in the schema, or names no type, a string", () => {
    expect(
      coerceTextArgs({ extra: "10", loose: "true" }, schema({ loose: { description: "anything" } })),
    ).toEqual({
      extra: "10",
      loose: "true",
    });
  });

  it.each([
    ["integer", { type: "integer" }, " 42 ", 42],
    ["negative integer", { type: "integer" }, "-7", -7],
    ["number", { type: "number" }, "0.5", 0.5],
    ["number in exponent form", { type: "number" }, "1e3", 1000],
    ["boolean", { type: "boolean" }, "True", true],
    ["object", { type: "object" }, '{"a": [1]}', { a: [1] }],
    ["array", { type: "array" }, '["a", 2]', ["a", 2]],
    ["nullable integer, null", { type: ["integer", "null"] }, "null", null],
    ["nullable integer via anyOf", { anyOf: [{ type: "integer" }, { type: "null" }] }, "3", 3],
    ["numeric enum", { enum: [1, 2, 3] }, "2", 2],
    ["boolean const", { const: true }, "true", true],
  ])("converts %s", (_label, property, text, expected) => {
    expect(coerceTextArgs({ value: text }, schema({ value: property }))).toEqual({ value: expected });
  });

  it("follows a local $ref", () => {
    const root = schema({ count: { $ref: "#/$defs/Count" } }, { $defs: { Count: { type: "integer" } } });
    expect(coerceTextArgs({ count: "5" }, root)).toEqual({ count: 5 });
  });

  it.each([
    ["an integer that is not one", { type: "integer" }, "ten"],
    ["a fraction for an integer", { type: "integer" }, "1.5"],
    ["an integer past the safe range", { type: "integer" }, "90071992547409930"],
    ["a number with trailing text", { type: "number" }, "12px"],
    ["an object that is an array", { type: "object" }, "[1]"],
    ["a boolean spelled yes", { type: "boolean" }, "yes"],
  ])("leaves %s as the text, for the tool's schema to reject", (_label, property, text) => {
    expect(coerceTextArgs({ value: text }, schema({ value: property }))).toEqual({ value: text });
  });

  it("prefers the string when a union allows it", () => {
    expect(coerceTextArgs({ id: "0042" }, schema({ id: { type: ["string", "integer"] } }))).toEqual({
      id: "0042",
    });
  });

  it("keeps a __proto__ key an own property and does not read the schema's prototype", () => {
    const args = coerceTextArgs({ ["__proto__"]: "1", toString: "2" }, schema({}));
    expect(Object.getPrototypeOf(args)).toBe(Object.prototype);
    expect(Object.hasOwn(args, "__proto__")).toBe(true);
    expect(args.toString).toBe("2");
  });
});
