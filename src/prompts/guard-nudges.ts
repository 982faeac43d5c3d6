/**
 * The wording of the proxy's conversation guards: the last word on a call loop, a denied call's
 * tool reply and the refusal when every try was denied. Pure; the decisions live in guardrails/.
 */

/**
 * The text answer that ends a turn on a call loop: which call repeated, how often, and what the
 * user can do. The repetition notes before it went to the model; this one goes to the user.
 * @example
 * callLoopStopMessage("read_file", { path: "src/a.ts" }, 6);
 */
export function callLoopStopMessage(
  toolName: string,
  args: Record<string, unknown>,
  repeats: number,
): string {
  const shown = JSON.stringify(args);
  const excerpt = shown.length > 200 ? `${shown.slice(0, 200)}…` : shown;
  return `[LoopDetected] Stopped: the model called '${toolName}' with the same arguments (${excerpt}) ${repeats} times in a row and got the same result each time, so it is stuck in a loop. Its notes about the repetition did not help. Rephrase the task, give the missing information, or continue in a new conversation.`;
}

/**
 * The tool reply to a call the permission policy denied: what was denied and why, and that the
 * model should choose another way (sent on the tool channel, like an unknown-tool reply).
 */
export function deniedCallNudge(toolName: string, reason: string): string {
  return `[Denied] The call to '${toolName}' was not run: ${reason}. It is not allowed here and will be denied again. Do something else that is allowed, or answer the user without it.`;
}

/** The text answer when the model kept choosing denied calls until its tries ran out. */
export function permissionRefusal(denied: readonly { tool: string; reason: string }[]): string {
  const listed = denied.map((call) => `'${call.tool}' (${call.reason})`).join("; ");
  return `[Denied] I did not run the call the model chose: the proxy's permission policy denies ${listed}, and the model chose no allowed action in its remaining tries. Change the request, or the policy (forge proxy --permissions), if the action is intended.`;
}
