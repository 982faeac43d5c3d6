/**
 * The Nudge value: a corrective message for the caller to route into the conversation.
 */

/** What a nudge corrects. */
export type NudgeKind = "retry" | "unknown_tool" | "malformed_args" | "step" | "prerequisite";

/**
 * A corrective message. `role` is `"user"` for retry nudges and `"tool"` (a tool-error reply to the
 * offending call) for unknown-tool, malformed-arguments, step and prerequisite nudges.
 */
export interface Nudge {
  role: "user" | "tool";
  content: string;
  kind: NudgeKind;
  /** Escalation tier: 1–3 for step nudges, the consecutive violation count for prerequisite nudges, else 0. */
  tier: number;
}
