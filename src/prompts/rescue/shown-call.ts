/**
 * Rescue the call form a step nudge shows the model (`callShape`, docs/decisions/025):
 * `name({"arg": value})`, a known tool's name with one JSON object in parentheses.
 */

import { resolveToolName } from "../../core/tool-names.ts";
import type { ToolCall } from "../../core/types.ts";
import { isJsonObject } from "./call-shape.ts";
import { matchBracket, tryParseJson } from "./json-scan.ts";
import { ABSENT, found, garbled, type RescueContext, type RescueOutcome } from "./outcome.ts";
import { readName, skipSpace } from "./python-literal.ts";

/** Where a line's content starts: the start of the text or just after a newline, past spaces and tabs. */
const LINE_START = /(?:^|\n)[ \t]*/g;

/**
 * Rescue every `name({json})` call of a known tool that starts a line of `text`, in order.
 *
 * A small model told "Call get_account({"account_id": "AC-311"}) now." copies the call as it was
 * shown, often with a sentence after it on the same line ("… Now. This call is needed …"): the
 * call starting the line is the attempt, and what follows it on the line is ignored. A call in
 * the middle of a line is prose quoting one, not a call. The argument must be one strict JSON
 * object: a copied placeholder (`<account_id>`), a second argument or an unclosed object make the
 * text `garbled`. Only names in `context.toolNames`, or near misses of one (ADR 019), start a call.
 * @example
 * parseShownCalls('get_account({"account_id": "AC-311"}) Now.', { toolNames: ["get_account"] })
 * // { status: "found", calls: [{ tool: "get_account", args: { account_id: "AC-311" } }] }
 */
export function parseShownCalls(text: string, context: RescueContext = {}): RescueOutcome {
  const known = context.toolNames ?? [];
  if (known.length === 0 || !text.includes("({")) return ABSENT;
  const calls: ToolCall[] = [];
  const lineStart = new RegExp(LINE_START);
  for (let match = lineStart.exec(text); match !== null; match = lineStart.exec(text)) {
    const start = match.index + match[0].length;
    if (match[0].length === 0) lineStart.lastIndex = match.index + 1;
    const head = readName(text, start);
    // A near miss of an offered name counts too (the rescue then renames it, ADR 019).
    if (head === null || resolveToolName(head.name, known) === null) continue;
    const paren = skipSpace(text, head.end);
    const brace = skipSpace(text, paren + 1);
    if (text[paren] !== "(" || text[brace] !== "{") continue;
    const bracket = matchBracket(text, brace);
    if (!("end" in bracket)) return garbled(`the argument of ${head.name}( never closes`);
    const parsed = tryParseJson(text.slice(brace, bracket.end));
    if (!parsed.ok || !isJsonObject(parsed.value)) {
      return garbled(`the argument of ${head.name}(…) is not one JSON object`);
    }
    const close = skipSpace(text, bracket.end);
    if (text[close] !== ")") return garbled(`${head.name}({…}) has more than one argument`);
    calls.push({ tool: head.name, args: parsed.value });
    lineStart.lastIndex = close + 1;
  }
  return calls.length === 0 ? ABSENT : found(calls);
}
