/**
 * Rescue gpt-oss calls written in its harmony format as text:
 * `<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>`.
 */

import type { ToolCall } from "../../core/types.ts";
import { isJsonObject } from "./call-shape.ts";
import { matchBracket, tryParseJson } from "./json-scan.ts";
import { ABSENT, found, garbled, type RescueOutcome } from "./outcome.ts";

/** The recipient of a call: `to=functions.<name>`. */
const RECIPIENT = /to=functions\.([A-Za-z0-9_.-]+)/g;
/**
 * What may stand between the recipient and the JSON args: header tokens, a channel, the content
 * type, and the `=` some servers leave when they drop the special tokens.
 */
const HEADER_TAIL =
  /^(?:\s+|<\|channel\|>|<\|constrain\|>|<\|message\|>|<\|start\|>|assistant|commentary|analysis|json|=)*$/;

/**
 * Rescue every `to=functions.name … {json}` call in `text`, in order.
 *
 * The recipient may come after the channel (`<|channel|>commentary to=functions.x`) or before it
 * (`to=functions.x<|channel|>commentary json`); the args are the JSON object after `<|message|>`,
 * up to `<|call|>` or wherever the object closes. With the special tokens dropped
 * (`commentary to=functions.x json{…}`) the header's words alone are skipped. A recipient whose
 * header holds anything else, or whose args are not one JSON object, makes the text `garbled`.
 * @example
 * parseHarmony('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>')
 * // { status: "found", calls: [{ tool: "get_weather", args: { city: "Paris" } }] }
 */
export function parseHarmony(text: string): RescueOutcome {
  if (!text.includes("to=functions.")) return ABSENT;
  const calls: ToolCall[] = [];
  const recipient = new RegExp(RECIPIENT);
  for (let match = recipient.exec(text); match !== null; match = recipient.exec(text)) {
    const tool = match[1] ?? "";
    const afterName = match.index + match[0].length;
    const argsStart = text.indexOf("{", afterName);
    if (argsStart === -1 || !HEADER_TAIL.test(text.slice(afterName, argsStart))) {
      return garbled(`to=functions.${tool} is not followed by JSON args`);
    }
    const bracket = matchBracket(text, argsStart);
    if (!("end" in bracket)) return garbled(`the args of to=functions.${tool} never close`);
    const parsed = tryParseJson(text.slice(argsStart, bracket.end));
    if (!parsed.ok || !isJsonObject(parsed.value)) {
      return garbled(`the args of to=functions.${tool} are not a JSON object`);
    }
    calls.push({ tool, args: parsed.value });
    recipient.lastIndex = bracket.end;
  }
  return found(calls);
}
