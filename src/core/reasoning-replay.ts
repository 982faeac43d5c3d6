/**
 * Which of the model's earlier reasoning blocks are sent back to it. The history keeps every
 * REASONING message; the policy only shapes what one request carries.
 */
import { hasReasoning } from "./history.ts";
import { type Message, MessageType } from "./messages.ts";

/**
 * `full`: every reasoning block is re-sent (folded into its tool-call message). `keep-last`: only
 * the latest run of REASONING messages, the one thinking models continue from. `none`: no
 * earlier reasoning. On thinking models each re-sent block costs context on every turn.
 */
export type ReasoningReplay = "full" | "keep-last" | "none";

/** The policies, for option checks and CLI choices. */
export const REASONING_REPLAY_POLICIES: readonly ReasoningReplay[] = ["full", "keep-last", "none"];

/**
 * The messages a request carries under a policy: `messages` itself when nothing is dropped (so
 * incremental serializers keep their state), else a new array without the dropped REASONING
 * messages.
 * @example applyReasoningReplay(history, "keep-last")
 */
export function applyReasoningReplay(
  messages: readonly Message[],
  policy: ReasoningReplay,
): readonly Message[] {
  if (policy === "full" || !hasReasoning(messages)) return messages;
  let keepFrom = messages.length;
  if (policy === "keep-last") {
    let last = messages.length - 1;
    while (last >= 0 && messages[last]?.metadata.type !== MessageType.REASONING) last -= 1;
    keepFrom = last;
    while (keepFrom > 0 && messages[keepFrom - 1]?.metadata.type === MessageType.REASONING) keepFrom -= 1;
  }
  const dropped = (message: Message | undefined, index: number) =>
    message?.metadata.type === MessageType.REASONING && index < keepFrom;
  if (!messages.some(dropped)) return messages;
  return messages.filter((message, index) => !dropped(message, index));
}

/** Check a policy from outside (options, flags): a clear RangeError naming the choices. */
export function assertReasoningReplay(owner: string, value: unknown): ReasoningReplay {
  if (REASONING_REPLAY_POLICIES.includes(value as ReasoningReplay)) return value as ReasoningReplay;
  throw new RangeError(
    `${owner}: reasoningReplay must be one of ${REASONING_REPLAY_POLICIES.map((policy) => `"${policy}"`).join(", ")}, got ${JSON.stringify(value)}`,
  );
}
