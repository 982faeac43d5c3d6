/**
 * Rescue calls written in the format the model's own chat template shows (`TemplateCallFormat`,
 * docs/decisions/035-call-format-from-the-chat-template.md).
 */
import type { TemplateCallFormat } from "../chat-template.ts";
import { isJsonObject } from "./call-shape.ts";
import { type JsonCandidate, scanJson, tryParseJson } from "./json-scan.ts";
import { markedBlocks } from "./marked-blocks.ts";
import { ABSENT, found, garbled, type RescueOutcome } from "./outcome.ts";

/**
 * Read every call of `format` in `text`, in order: the JSON object after each opening marker, up
 * to its closing marker (or, when the model stopped before closing it, to the next opening marker
 * or the end). With `doubledBraces`, an object written `{{…}}` loses one brace pair first (or only
 * its extra opening brace, when the model closed it singly); one written with single braces is read
 * as it is. A block that is not one call of the format's keys
 * makes the text `garbled`. A text without the opening marker is `absent`, except that with
 * `doubledBraces` its bare `{{…}}` objects are read as calls (the model copied the shown form
 * without the markers).
 * @example
 * parseTemplateCalls('<tool_call>\n{{"name": "f", "arguments": {"x": 1}}}\n</tool_call>', qwen15Format)
 * // { status: "found", calls: [{ tool: "f", args: { x: 1 } }] }
 */
export function parseTemplateCalls(text: string, format: TemplateCallFormat): RescueOutcome {
  const { open, close } = format;
  if (open.length > 0 && !text.includes(open) && format.doubledBraces) return unmarkedDoubled(text, format);
  if (open.length === 0 || !text.includes(open)) return ABSENT;
  const calls = [];
  for (const body of markedBlocks(text, open, close)) {
    const call = readCall(body.trim(), format);
    if (typeof call === "string") return garbled(call);
    calls.push(call);
  }
  return found(calls);
}

/**
 * The doubled-brace objects of a text that has no opening marker: a model shown `{{"name": …}}`
 * by its template writes them bare, or between other tags (Qwen2.5-Coder 1.5B: `<tools>` and
 * `{{"name": "get_weather", "arguments": {…}}}` on each line). Only objects that start with `{{`
 * count; one that does and is not a call of the format's keys makes the text `garbled`. An object
 * whose opening brace is doubled but whose closing one is not (`{{"name": …, "arguments": {…}}`,
 * the 1.5B again) never closes as written: it is read from its second brace, where it closes.
 */
function unmarkedDoubled(text: string, format: TemplateCallFormat): RescueOutcome {
  if (!text.includes("{{")) return ABSENT;
  const calls = [];
  const candidates = scanJson(text);
  for (let index = 0; index < candidates.length; index++) {
    const candidate = candidates[index] as JsonCandidate;
    const body = text.slice(candidate.start, candidate.end).trim();
    if (!body.startsWith("{{")) continue;
    const inner = candidates[index + 1];
    const closesSingly = !body.endsWith("}}") && inner?.valid === true && inner.start === candidate.start + 1;
    if (!body.endsWith("}}") && !closesSingly) return garbled(`a {{…}} call of ${format.open} is cut off`);
    const call = closesSingly ? readCall(text.slice(inner.start, inner.end), format) : readCall(body, format);
    if (typeof call === "string") return garbled(call);
    calls.push(call);
    if (closesSingly) index++;
  }
  return calls.length === 0 ? ABSENT : found(calls);
}

function readCall(body: string, format: TemplateCallFormat) {
  const parsed = format.doubledBraces && body.startsWith("{{") ? parseDoubled(body) : tryParseJson(body);
  if (!parsed.ok || !isJsonObject(parsed.value)) return `a ${format.open} block does not hold a JSON object`;
  const name = parsed.value[format.nameKey];
  if (typeof name !== "string" || name.trim().length === 0) {
    return `a ${format.open} block has no "${format.nameKey}"`;
  }
  const raw = parsed.value[format.argumentsKey] ?? {};
  const args = typeof raw === "string" ? tryParseJson(raw) : { ok: true as const, value: raw };
  if (!args.ok || !isJsonObject(args.value)) {
    return `a ${format.open} block's "${format.argumentsKey}" is not a JSON object`;
  }
  return { tool: name, args: args.value };
}

/**
 * A `{{…}}` object with one brace pair dropped; when that is no JSON, with only its extra opening
 * brace dropped (the model doubled the opening brace and closed the object as JSON does).
 */
function parseDoubled(body: string): ReturnType<typeof tryParseJson> {
  const pair = body.endsWith("}}") ? tryParseJson(body.slice(1, -1)) : { ok: false as const };
  return pair.ok ? pair : tryParseJson(body.slice(1));
}
