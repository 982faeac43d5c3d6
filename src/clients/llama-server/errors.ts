/**
 * Error bodies of OpenAI-compatible servers that mean something other than "the request failed":
 * a server that does not do native tools, and llama-server's tool-call parse failure, whose body
 * carries the model's output.
 */
import type { ToolSpec } from "../../core/tools.ts";
import type { LLMResponse } from "../../core/types.ts";
import { rescueToolCall } from "../../prompts/rescue/index.ts";
import { resolveReasoning } from "../reasoning.ts";
import { isPlainObject } from "../wire.ts";

/**
 * llama-server's tool-call parser rejected the model's output. Older builds say "Failed to parse
 * input at pos N: <output>" (the output embedded); newer ones "The model produced output that does
 * not match the expected <format> format" (the output only in the server log).
 */
const TOOL_PARSE_FAILURE = /Failed to parse input|produced output that does not match the expected/i;
const EMBEDDED_OUTPUT = /^[\s\S]*?Failed to parse input(?: at pos \d+)?:?\s?/i;
const TOOL_REJECTION_STATUSES: ReadonlySet<number> = new Set([400, 422, 500, 501]);

/** The error message inside an OpenAI-style error body (`{"error": {"message"}}`), else the body. */
export function errorMessageOf(body: string): string {
  try {
    const parsed: unknown = JSON.parse(body);
    if (isPlainObject(parsed)) {
      const error = parsed.error;
      if (isPlainObject(error) && typeof error.message === "string") return error.message;
      if (typeof error === "string") return error;
      if (typeof parsed.message === "string") return parsed.message;
    }
  } catch {
    // Not JSON: the body is the message.
  }
  return body;
}

/**
 * True when an error answer to a request with `tools` says the server does not do native tool
 * calling (llama-server without `--jinja`, vLLM without `--enable-auto-tool-choice`, a template
 * without tool support). A tool-call parse failure is not one: the server did take the tools.
 */
export function rejectsNativeTools(status: number, body: string): boolean {
  if (!TOOL_REJECTION_STATUSES.has(status)) return false;
  const message = errorMessageOf(body);
  if (TOOL_PARSE_FAILURE.test(message)) return false;
  return /tool|jinja|function.?call/i.test(message);
}

/**
 * For llama-server's HTTP 500 tool-call parse failure: the model output its message embeds
 * ("Failed to parse input at pos N: <output>"), or the message itself when it embeds none.
 * `null` for any other error.
 */
export function toolParseFailureOutput(status: number, body: string): string | null {
  if (status !== 500) return null;
  const message = errorMessageOf(body);
  if (!TOOL_PARSE_FAILURE.test(message)) return null;
  return EMBEDDED_OUTPUT.test(message) ? message.replace(EMBEDDED_OUTPUT, "") : message;
}

/**
 * What a tool-call parse failure becomes: the calls rescued from the embedded output (named tools
 * only), else the output (or the server's message) as text, so the loop nudges and retries
 * instead of the run failing.
 */
export function responseFromParseFailure(
  output: string,
  toolNames: string[],
  think: boolean | undefined,
  tools?: readonly ToolSpec[],
): LLMResponse {
  const calls = rescueToolCall(output, toolNames, tools ? { tools } : {});
  if (!calls) return { content: output };
  const { reasoning } = resolveReasoning(null, output, think);
  if (reasoning === null || calls.length === 0) return calls;
  const [first, ...rest] = calls;
  return first ? [{ ...first, reasoning }, ...rest] : calls;
}
