/**
 * The `name({json})` form a step nudge shows the model (callShape, ADR 025), read back by the
 * rescue: on what the real Qwen2.5-Coder 0.5B wrote after such a nudge (captured by the eval,
 * test/fixtures/real-model/qwen2.5-coder-0.5b-shown-calls.json), on every call shape the nudge can
 * write, and not on prose that quotes a call.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { callShape } from "../../../src/guardrails/call-shape.ts";
import { rescueToolCall } from "../../../src/prompts/rescue/index.ts";
import { parseShownCalls } from "../../../src/prompts/rescue/shown-call.ts";

const captured = JSON.parse(
  readFileSync(
    new URL("../../fixtures/real-model/qwen2.5-coder-0.5b-shown-calls.json", import.meta.url),
    "utf8",
  ),
) as { tools: string[]; outputs: { name: string; content: string }[] };

describe("the call form a step nudge shows, rescued", () => {
  it("reads the real 0.5B's copied call, ignoring the sentence it ran on with", () => {
    const calls = captured.outputs.map((output) => rescueToolCall(output.content, captured.tools));
    expect(calls).toEqual([
      [{ tool: "get_account", args: { account_id: "AC-311" } }],
      [{ tool: "list_invoices", args: { account_id: "AC-311" } }],
      [{ tool: "get_account", args: { account_id: "AC-311" } }],
    ]);
  });

  it("reads back every call the nudge writes with known values", () => {
    const schema = {
      type: "object",
      properties: { order_id: { type: "string" }, count: { type: "integer" }, rush: { type: "boolean" } },
      required: ["order_id", "count", "rush"],
    };
    const shown = callShape("lookup_order", schema, { order_id: "A-1042", count: 3, rush: false });
    expect(shown).toBe('lookup_order({"order_id": "A-1042", "count": 3, "rush": false})');
    expect(rescueToolCall(`${shown} now.`, ["lookup_order"])).toEqual([
      { tool: "lookup_order", args: { order_id: "A-1042", count: 3, rush: false } },
    ]);
  });

  it("takes one call per line, in order, and a near-miss name like every format", () => {
    const text = 'get_account({"account_id": "A"})\n  List_Invoices({"account_id": "A"})';
    expect(rescueToolCall(text, ["get_account", "list_invoices"])).toEqual([
      { tool: "get_account", args: { account_id: "A" } },
      { tool: "list_invoices", args: { account_id: "A" } },
    ]);
  });

  it("leaves a call quoted mid-line, an unknown name and plain prose alone", () => {
    const tools = { toolNames: ["get_account"] };
    expect(parseShownCalls('You should call get_account({"account_id": "A"}) first.', tools)).toEqual({
      status: "absent",
    });
    expect(parseShownCalls('delete_account({"account_id": "A"})', tools)).toEqual({ status: "absent" });
    expect(parseShownCalls("get_account(account_id='A')", tools)).toEqual({ status: "absent" });
  });

  it("rescues nothing from a copied placeholder, a second argument or an unclosed object", () => {
    const tools = ["get_account"];
    expect(rescueToolCall('get_account({"account_id": <account_id>})', tools)).toBeNull();
    expect(rescueToolCall('get_account({"account_id": "A"}, {"x": 1})', tools)).toBeNull();
    expect(rescueToolCall('get_account({"account_id": "A"', tools)).toBeNull();
  });
});
