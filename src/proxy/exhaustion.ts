/**
 * What the proxy makes of a guardrail loop that ran out of tries. Prose the model kept writing
 * after the nudges is its answer when the client lets it answer in text (`tool_choice` absent or
 * `auto`); anything else is `retries_exhausted` with the model's last raw output, whichever
 * budget ran out (prose, unknown tools, malformed arguments, the LLM-call limit).
 */
import { MaxIterationsError, ToolCallError, ToolExecutionError } from "../core/errors.ts";
import type { LLMResponse } from "../core/types.ts";

/**
 * Whether the client lets the model answer in text: no `tool_choice`, or `"auto"` (OpenAI's
 * string; an Anthropic `{type: "auto"}` is never forwarded, so it is absent here).
 */
export function allowsTextAnswer(extraBody: Record<string, unknown>): boolean {
  const choice = extraBody.tool_choice;
  return choice === undefined || choice === "auto";
}

/**
 * A response as the raw output reported with `retries_exhausted`: text as it came; tool calls as
 * JSON, each with its arguments, or with the error of arguments that could not be decoded (which
 * quotes what the model sent).
 */
export function rawOutputOf(response: LLMResponse | null): string {
  if (response === null) return "";
  if (!Array.isArray(response)) return response.content;
  return JSON.stringify(
    response.map((call) =>
      call.argumentsError === undefined
        ? { name: call.tool, arguments: call.args }
        : { name: call.tool, arguments_error: call.argumentsError },
    ),
  );
}

/**
 * The `ToolCallError` an exhausted inference-only run stands for, or null when `error` is not an
 * exhaustion. Inference-only runs execute no tool: a `ToolExecutionError` is the malformed-arguments
 * budget spent, a `MaxIterationsError` the LLM-call limit spent on a mix of failures.
 */
export function exhaustionOf(error: unknown, lastResponse: LLMResponse | null): ToolCallError | null {
  if (error instanceof ToolCallError) return error;
  if (error instanceof ToolExecutionError) {
    return new ToolCallError(
      `Retries exhausted: the arguments of '${error.toolName}' were malformed every time`,
      rawOutputOf(lastResponse),
      { cause: error },
    );
  }
  if (error instanceof MaxIterationsError) {
    return new ToolCallError(
      `Retries exhausted: ${error.iterations} LLM calls without a valid tool call`,
      rawOutputOf(lastResponse),
      { cause: error },
    );
  }
  return null;
}
