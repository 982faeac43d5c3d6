/**
 * The prose policy's test (docs/decisions/024-prose-policy.md): does a text answer show any sign
 * that the model tried to call a tool? Under `tool_choice: auto` a text with none is the answer as
 * it stands; one with a sign is rescued or nudged as before.
 */
import { detectToolCalls } from "./index.ts";

/** Call-shaped JSON: an object opening with a key a call is written with. */
const CALL_JSON =
  /\{\s*"(?:name|function|tool|tool_name|function_name|arguments|parameters|args|action)"\s*:/;
/** Markup a template or a model uses around a call. */
const CALL_MARKUP =
  /<\/?(?:tool_call|tool_calls|function|functioncall|function_call|tools?)\b|\[TOOL_CALLS\]|\[TOOL_REQUEST\]|<\|python_tag\|>|<\|tool_call|to=functions\.|```(?:json|tool_code|python)\b|\{\{\s*"/i;

/**
 * True when `text` mentions an offered tool (`toolNames`), holds call-shaped JSON or call markup,
 * or holds a call the rescue would read (valid or garbled). A name counts where it reads as code:
 * followed by `(`, inside backticks or quotes, or an identifier no prose word looks like (one with
 * `_`, `.`, `-` or an inner capital) standing as a whole word. `ignore`: names that are not a
 * sign (the proxy's own `respond`, an English word).
 * @example showsCallAttempt("The capital of France is Paris.", ["get_weather"]) // false
 * @example showsCallAttempt("I'll use get_weather for that.", ["get_weather"]) // true
 */
export function showsCallAttempt(
  text: string,
  toolNames: readonly string[],
  ignore: readonly string[] = [],
): boolean {
  if (CALL_JSON.test(text) || CALL_MARKUP.test(text)) return true;
  const names = toolNames.filter((name) => !ignore.includes(name));
  if (names.some((name) => mentionsTool(text, name))) return true;
  return detectToolCalls(text, names).status !== "absent";
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function mentionsTool(text: string, name: string): boolean {
  const escaped = escapeRegExp(name);
  if (new RegExp(`(?:^|[^\\w.-])${escaped}\\s*\\(`, "i").test(text)) return true;
  if (new RegExp(`[\`'"]${escaped}[\`'"(]`, "i").test(text)) return true;
  const identifier = /[_.-]|[a-z][A-Z]/.test(name);
  return identifier && new RegExp(`(?:^|[^\\w.-])${escaped}(?![\\w-])`, "i").test(text);
}
