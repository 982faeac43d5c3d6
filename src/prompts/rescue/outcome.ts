/**
 * What one rescue parser concluded about a text: its format is absent, present but garbled, or found.
 */
import type { ToolCall } from "../../core/types.ts";

/**
 * A rescue parser's verdict.
 *
 * `absent`: the text does not use this format; the next parser is tried.
 * `garbled`: the text uses this format but a call in it cannot be read, so nothing is rescued —
 * the loop must not run part of a batch the model botched.
 * `found`: every call the format holds, in order of appearance.
 */
export type RescueOutcome =
  | { status: "absent" }
  | { status: "garbled"; reason: string }
  | { status: "found"; calls: ToolCall[] };

/** A rescue parser: a pure function of the model's text. Never throws. */
export type RescueParser = (text: string) => RescueOutcome;

/** The text does not use this format. */
export const ABSENT: RescueOutcome = Object.freeze({ status: "absent" });

/** The text uses this format but cannot be read; `reason` says why (for tests and debugging). */
export function garbled(reason: string): RescueOutcome {
  return { status: "garbled", reason };
}

/** The calls the text holds; `absent` when there are none. */
export function found(calls: ToolCall[]): RescueOutcome {
  return calls.length > 0 ? { status: "found", calls } : ABSENT;
}
