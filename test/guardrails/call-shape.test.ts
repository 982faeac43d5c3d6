/**
 * callShape: the pending step's call written out for the model, with the values its premature
 * terminal call already held.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool, toolJsonSchema } from "../../src/core/tools.ts";
import { callShape } from "../../src/guardrails/call-shape.ts";

const lookup = defineTool({
  name: "lookup_order_status",
  description: "Look up an order",
  parameters: z.object({
    order_id: z.string(),
    warehouse: z.number().int(),
    verbose: z.boolean().optional(),
  }),
  execute: () => "",
}).spec;
const schema = toolJsonSchema(lookup);

describe("callShape", () => {
  it("copies the values of the arguments whose names match, and only the required ones", () => {
    expect(
      callShape(lookup.name, schema, { order_id: "A-1042", warehouse: 7, status: "?", verbose: true }),
    ).toBe('lookup_order_status({"order_id": "A-1042", "warehouse": 7})');
  });

  it("writes a placeholder for an argument the call did not hold or held with another type", () => {
    expect(callShape(lookup.name, schema, { warehouse: "north" })).toBe(
      'lookup_order_status({"order_id": "<order_id>", "warehouse": <warehouse>})',
    );
  });

  it("lists every property when none is required, and none for a tool without parameters", () => {
    const optional = { type: "object", properties: { city: { type: "string" } } };
    expect(callShape("get_weather", optional, {})).toBe('get_weather({"city": "<city>"})');
    expect(callShape("ping", { type: "object" }, { city: "Paris" })).toBe("ping({})");
  });

  it("takes any value for a property of no declared type", () => {
    const free = { type: "object", properties: { filter: {} }, required: ["filter"] };
    expect(callShape("search", free, { filter: { year: 2024 } })).toBe('search({"filter": {"year":2024}})');
  });
});
