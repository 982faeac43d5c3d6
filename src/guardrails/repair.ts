/**
 * The user's tool-call repair hook (AI SDK `experimental_repairToolCall`-style): what needs
 * repair in a response (pure), and the hook's answer applied to it. Runs before a nudge.
 */
import { ToolCallRepairError } from "../core/errors.ts";
import type { ToolSpec } from "../core/tools.ts";
import { isLLMResponse, type LLMResponse, type ToolCall } from "../core/types.ts";
import type { TemplateCallFormat } from "../prompts/chat-template.ts";
import { validateResponse } from "./validate-response.ts";

/** Why a response needs repair. */
export type ToolCallRepairReason =
  /** Text from which rescue got no call (or rescue is off). */
  | "no_tool_call"
  /** A call names a tool that does not exist. */
  | "unknown_tool"
  /** A call's arguments could not be decoded into a JSON object (`ToolCall.argumentsError`). */
  | "malformed_arguments"
  /** A call's arguments do not fit its tool's schema. */
  | "invalid_arguments";

/** What the repair hook is given. */
export interface ToolCallRepairInput {
  /** The model's text: its prose, or the rejected calls as JSON. */
  text: string;
  /** The first call that failed, or null when the model wrote no call. */
  failedCall: ToolCall | null;
  /** Every call of the response (empty for text). */
  calls: readonly ToolCall[];
  /** The tools the model was offered. */
  tools: readonly ToolSpec[];
  /** What was wrong. */
  error: { reason: ToolCallRepairReason; message: string };
}

/**
 * Repairs a response the loop would otherwise nudge about: return the calls to run instead (they
 * are validated like any model's calls: unknown names and bad arguments are still rejected), or
 * `null` to let the nudge go ahead. A throw fails the run with `ToolCallRepairError`.
 * @example
 * const repairToolCall: RepairToolCall = ({ text }) =>
 *   /weather in (\w+)/i.test(text) ? [{ tool: "get_weather", args: { city: RegExp.$1 } }] : null;
 */
export type RepairToolCall = (
  input: ToolCallRepairInput,
) => ToolCall[] | null | undefined | Promise<ToolCall[] | null | undefined>;

/** What `findRepairNeed` reads besides the response. */
export interface RepairContext {
  toolNames: readonly string[];
  rescueEnabled: boolean;
  tools: readonly ToolSpec[];
  /** How the model writes a call, read from its chat template (`ValidateOptions.callFormat`). */
  callFormat?: TemplateCallFormat;
}

/**
 * What the hook would be asked to repair in `response`, or null when the response is a batch of
 * known tools whose arguments fit their schemas (nothing to repair). Pure.
 */
export function findRepairNeed(response: LLMResponse, context: RepairContext): ToolCallRepairInput | null {
  const verdict = validateResponse(response, context);
  const base = { tools: context.tools };
  if (verdict.kind === "text") {
    const message = "the response holds no tool call that could be read";
    return {
      ...base,
      text: verdict.raw,
      failedCall: null,
      calls: [],
      error: { reason: "no_tool_call", message },
    };
  }
  const calls = verdict.calls;
  const text = verdict.kind === "unknown_tools" ? verdict.raw : JSON.stringify(calls);
  if (verdict.kind === "unknown_tools") {
    const failedCall = calls.find((call) => verdict.unknown.includes(call.tool)) ?? null;
    const message = `no tool named ${verdict.unknown.map((name) => `'${name}'`).join(", ")}`;
    return { ...base, text, failedCall, calls, error: { reason: "unknown_tool", message } };
  }
  const malformed = calls.find((call) => call.argumentsError !== undefined);
  if (malformed) {
    const message = malformed.argumentsError ?? "";
    return { ...base, text, failedCall: malformed, calls, error: { reason: "malformed_arguments", message } };
  }
  const specs = new Map(context.tools.map((spec) => [spec.name, spec]));
  for (const call of calls) {
    const parsed = specs.get(call.tool)?.parameters.safeParse(call.args);
    if (parsed === undefined || parsed.success) continue;
    const message = parsed.error.issues
      .map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "(args)"}: ${issue.message}`)
      .join("; ");
    return { ...base, text, failedCall: call, calls, error: { reason: "invalid_arguments", message } };
  }
  return null;
}

/**
 * `response`, or the calls the hook repaired it into. The hook runs only when there is something
 * to repair; `null`, `undefined` or an empty list keep the response as it was (the loop nudges).
 * A throw, or an answer that is not a list of `{tool, args}` calls, is a `ToolCallRepairError`.
 */
export async function repairResponse(
  response: LLMResponse,
  hook: RepairToolCall,
  context: RepairContext,
): Promise<LLMResponse> {
  const need = findRepairNeed(response, context);
  if (need === null) return response;
  let repaired: unknown;
  try {
    repaired = await hook(need);
  } catch (error) {
    const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    throw new ToolCallRepairError(`repairToolCall threw: ${detail}`, need.text, { cause: error });
  }
  if (repaired === null || repaired === undefined) return response;
  if (!Array.isArray(repaired) || !isLLMResponse(repaired)) {
    throw new ToolCallRepairError(
      "repairToolCall must return a list of { tool, args } calls, null or undefined",
      need.text,
    );
  }
  return repaired.length > 0
    ? repaired.map(({ tool, args, reasoning }) => ({
        tool,
        args,
        ...(reasoning !== undefined && { reasoning }),
      }))
    : response;
}
