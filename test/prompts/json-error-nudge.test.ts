/**
 * The retry nudge for a call written as JSON that is no JSON: it points at where the JSON breaks.
 * The texts are the real models' (eval traces of 29 Nov 2026): the 1.5B's `sequential_3step`
 * terminal call with an expression for a number, written three times in a row after the plain
 * nudge, and the 0.5B copying a step nudge's call with its keys unquoted (docs/eval.md).
 */
import { describe, expect, it } from "vitest";
import { jsonErrorLine, retryNudge } from "../../src/prompts/nudges.ts";

const TOOLS = ["get_account", "list_invoices", "send_statement"];
const EXPRESSION =
  '{"name": "send_statement", "arguments": {"account_id": "AC-311", "owner": "Dana Whitfield", "total_due": 120.5 + 79.5 + 300, "currency": "EUR"}}';
const UNQUOTED = 'get_account({account_id: "AC-311"})';

describe("where a JSON call breaks, in the retry nudge", () => {
  it("shows the arithmetic the 1.5B wrote for a number, and says JSON holds values only", () => {
    expect(jsonErrorLine(EXPRESSION, TOOLS)).toBe(
      'Your call is not valid JSON at "…l_due": 120.5 + 79.5 + 300, "c…": JSON holds finished values only (no arithmetic, variables or comments; keys and strings in double quotes). Write each argument as its value.',
    );
    const nudge = retryNudge(EXPRESSION, TOOLS).split("\n");
    expect(nudge[0]).toBe("Your last response was not a valid tool call.");
    expect(nudge[2]).toMatch(/^Your call is not valid JSON at /);
    expect(nudge.at(-1)).toBe(
      "Respond with exactly one tool call using one of the available tools, and no other text.",
    );
  });

  it("shows the unquoted key of a copied name({…}) call", () => {
    expect(jsonErrorLine(UNQUOTED, TOOLS)).toMatch(/^Your call is not valid JSON at "\{account_id: "AC-…"/);
  });

  it("says nothing for prose, a cut-off call, JSON naming no tool, or a valid call", () => {
    expect(jsonErrorLine("I will look up the account first.", TOOLS)).toBeNull();
    expect(jsonErrorLine('{"name": "get_account", "arguments": {"account_id": "AC-3', TOOLS)).toBeNull();
    expect(jsonErrorLine('{"total": 1 + 2}', TOOLS)).toBeNull();
    expect(jsonErrorLine('{"name": "get_account", "arguments": {"account_id": "AC-311"}}', TOOLS)).toBeNull();
    expect(retryNudge("I will look up the account first.", TOOLS)).not.toContain("not valid JSON");
  });
});
