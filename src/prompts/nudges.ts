import { detectToolCalls } from "./rescue/index.ts";
import { scanJson } from "./rescue/json-scan.ts";

/**
 * Nudge builders: the corrective messages the loop sends when a model goes off the rails.
 * Each is a pure function of what went wrong; the wording escalates with the tier.
 */

/**
 * Default retry nudge for text that is not a usable tool call (sent on the user channel). When the
 * text holds a well-formed call to a tool that does not exist, it says so; when the available tool
 * names are known, it lists them — small models fix a name far more often than they fix "prose".
 */
export function retryNudge(rawResponse: string, availableTools: readonly string[] = []): string {
  const trimmed = rawResponse.trim();
  const excerpt = trimmed.slice(0, 200);
  const lines = [
    "Your last response was not a valid tool call.",
    excerpt.length > 0 ? `You wrote: "${excerpt}${trimmed.length > 200 ? "…" : ""}"` : "You wrote nothing.",
  ];
  const detected = detectToolCalls(rawResponse, availableTools);
  const invalid = detected.status === "garbled" ? jsonErrorLine(rawResponse, availableTools) : null;
  if (invalid !== null) lines.push(invalid);
  if (availableTools.length > 0 && detected.status === "found") {
    const unknown = [
      ...new Set(detected.calls.map((call) => call.tool).filter((name) => !availableTools.includes(name))),
    ];
    if (unknown.length > 0) {
      lines.push(
        `${unknown.map((name) => `'${name}'`).join(", ")} ${unknown.length === 1 ? "is" : "are"} not an available tool.`,
      );
    }
  }
  if (availableTools.length > 0) lines.push(`Available tools: ${availableTools.join(", ")}.`);
  lines.push("Respond with exactly one tool call using one of the available tools, and no other text.");
  return lines.join("\n");
}

/**
 * Where a call written as JSON stops being JSON, for the retry nudge: the first object that names
 * an available tool (in double quotes, or as `name(` right before it) and does not parse, with a
 * few characters around the
 * position `JSON.parse` reports. Null when there is none, or the object is only cut off (no
 * position). Small models write `"total_due": 120.5 + 79.5` or unquoted keys and repeat them when
 * only told the call was not valid.
 * @example
 * jsonErrorLine('{"name": "pay", "arguments": {"total": 1 + 2}}', ["pay"])
 * // 'Your call is not valid JSON at "…"total": 1 + 2}}…": …'
 */
export function jsonErrorLine(text: string, toolNames: readonly string[]): string | null {
  for (const candidate of scanJson(text)) {
    const body = text.slice(candidate.start, candidate.end);
    // Only objects that close: one cut off by the token cap runs to the end of the text unclosed.
    if (candidate.valid || !body.trimEnd().endsWith("}")) continue;
    const before = text.slice(0, candidate.start).trimEnd();
    const named = toolNames.some((name) => body.includes(`"${name}"`) || before.endsWith(`${name}(`));
    if (!named) continue;
    const position = parseErrorPosition(body);
    if (position === null) continue;
    const from = Math.max(0, position - 14);
    const excerpt = body.slice(from, position + 16).replace(/\s+/g, " ");
    return `Your call is not valid JSON at "${from > 0 ? "…" : ""}${excerpt}…": JSON holds finished values only (no arithmetic, variables or comments; keys and strings in double quotes). Write each argument as its value.`;
  }
  return null;
}

function parseErrorPosition(body: string): number | null {
  try {
    JSON.parse(body);
    return null;
  } catch (error) {
    const match = /at position (\d+)/.exec(error instanceof Error ? error.message : "");
    return match ? Number(match[1]) : null;
  }
}

/**
 * Note appended to the result of a call that repeats the previous turn's call with the same
 * arguments: the result is the same, so say what to call instead (`next`: the pending required
 * steps when `pending`, else the terminal tools).
 */
export function repeatedCallNudge(toolName: string, next: readonly string[], pending: boolean): string {
  const names = next.map((name) => `'${name}'`).join(" or ");
  if (next.length === 0) {
    return `[RepeatedCall] You already called '${toolName}' with these arguments in your last turn; the result is the same. Do not call it again with the same arguments.`;
  }
  return pending
    ? `[RepeatedCall] You already called '${toolName}' with these arguments in your last turn; the result is the same. Do not call it again: the steps still to do are ${names}. Call ${names} now.`
    : `[RepeatedCall] You already called '${toolName}' with these arguments in your last turn; the result is the same, and you have what you need. Do not call it again: call ${names} now to finish.`;
}

/** Tool-error reply for a call to a tool that does not exist. */
export function unknownToolNudge(toolName: string, availableTools: readonly string[]): string {
  return `[UnknownTool] The tool '${toolName}' does not exist. Available tools: ${availableTools.join(", ")}. Call one of these tools instead.`;
}

/** Tool-error reply for a call that was valid but not run because another call of its batch was rejected. */
export function notRunNudge(toolName: string, reason: string): string {
  return `[NotRun] '${toolName}' was not run because this batch was rejected: ${reason}. Call it again if you still need it.`;
}

/**
 * Tool-error reply for a premature terminal call, escalating over three tiers:
 * 1 explains, 2 demands one of the pending tools now, 3 says STOP. `nextCall`, when given, is the
 * first pending step's call written out (`callShape`); the reply ends by asking for exactly it.
 * @example
 * stepNudge("report_status", ["lookup_order_status"], 1, 'lookup_order_status({"order_id": "A-1042"})')
 * // "… Call them first, then call report_status. Call lookup_order_status({"order_id": "A-1042"}) now."
 */
export function stepNudge(
  terminalTool: string,
  pendingSteps: readonly string[],
  tier: number,
  nextCall?: string,
): string {
  const pending = pendingSteps.join(", ");
  const shown = nextCall === undefined ? "" : ` Call ${nextCall} now.`;
  if (tier <= 1) {
    return `[StepEnforcementError] You cannot call ${terminalTool} yet. These required steps are not done: ${pending}. Call them first, then call ${terminalTool}.${shown}`;
  }
  if (tier === 2) {
    return `[StepEnforcementError] ${terminalTool} was rejected again. You must call one of these tools now: ${pending}. Do not call ${terminalTool} until they are done.${shown}`;
  }
  return `[StepEnforcementError] STOP. Calling ${terminalTool} will keep failing. Your next call must be ${pendingSteps[0] ?? pending}. Required steps still missing: ${pending}.${shown}`;
}

/**
 * Reply for a terminal call held back from a batch that also calls pending steps (ADR 039): the
 * steps run, their results follow this reply, and the terminal call is to come again with values
 * from them. `later`: the required steps still pending after this batch's.
 * @example
 * heldTerminalNudge("send_statement", ["get_account", "list_invoices"], [])
 * // "[StepEnforcementError] Held back: send_statement was not run. You called it in the same answer as get_account, list_invoices, before their results existed. …"
 */
export function heldTerminalNudge(
  terminalTool: string,
  running: readonly string[],
  later: readonly string[],
): string {
  const rest =
    later.length === 0 ? "" : ` The required steps ${later.join(", ")} are still to do after them.`;
  return `[StepEnforcementError] Held back: ${terminalTool} was not run. You called it in the same answer as ${running.join(", ")}, before their results existed. Those run now and their results follow.${rest} Then call ${terminalTool} again, with values taken from those results.`;
}

/**
 * Reply for a call held back from a batch that also calls its prerequisites (ADR 039): they run,
 * their results follow, and the call is to come again with values from them.
 * @example
 * heldPrerequisiteNudge("list_invoices", ["get_account"])
 * // "[PrereqError] Held back: list_invoices was not run. It needs the result of get_account, which you called in the same answer. …"
 */
export function heldPrerequisiteNudge(toolName: string, prerequisites: readonly string[]): string {
  const names = prerequisites.join(", ");
  return `[PrereqError] Held back: ${toolName} was not run. It needs the result of ${names}, which you called in the same answer. That runs now and its result follows. Then call ${toolName} again, with values taken from that result.`;
}

/**
 * Tool-error reply for a call whose arguments could not be decoded into a JSON object (answered
 * like a failing tool, on the tool channel).
 */
export function malformedArgumentsNudge(toolName: string, reason: string): string {
  return `[ToolError] ToolArgumentError: the arguments of '${toolName}' are not a JSON object (${reason}). Call ${toolName} again with its arguments as one JSON object.`;
}

/**
 * The transient notice sent when the context crosses a `warnAt` fraction of its budget: how full
 * it is, and that the model should wrap up rather than start new explorations.
 */
export function contextWarningNudge(fraction: number, tokens: number, budgetTokens: number): string {
  const percent = Math.round(fraction * 100);
  return `[ContextWarning] The conversation has used ${percent}% of its context (about ${Math.round(tokens)} of ${budgetTokens} tokens). Older tool results may be summarized or dropped. Keep your next calls focused and finish the task with the fewest steps you can.`;
}

/** Tool-error reply for a call whose prerequisites have not been called. */
export function prerequisiteNudge(toolName: string, missing: readonly string[]): string {
  return `[PrereqError] You cannot call ${toolName} yet: call ${missing.join(", ")} first. ${toolName} depends on ${missing.length === 1 ? "its" : "their"} result.`;
}
