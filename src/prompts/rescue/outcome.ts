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
  | {
      status: "found";
      calls: ToolCall[];
      /**
       * Indexes of the calls whose arg values are the text the model wrote (Qwen-Coder's
       * `<parameter=k>v</parameter>`), all strings; `rescueToolCall` converts them by the tool's
       * schema. Absent when every call's args came from JSON.
       */
      textValued?: number[];
    };

/**
 * What a rescue parser may know besides the text. Formats without a marker (a bare pythonic
 * call, FunctionGemma's `call:name{…}` with its tokens stripped) are only recognised by a known
 * tool's name, so prose that mentions `f(x)` is not read as a call.
 */
export interface RescueContext {
  /** The available tools' names; without them, the marker-less formats are `absent`. */
  toolNames?: readonly string[];
}

/** A rescue parser: a pure function of the model's text (and the tool names). Never throws. */
export type RescueParser = (text: string, context?: RescueContext) => RescueOutcome;

/** The text does not use this format. */
export const ABSENT: RescueOutcome = Object.freeze({ status: "absent" });

/** The text uses this format but cannot be read; `reason` says why (for tests and debugging). */
export function garbled(reason: string): RescueOutcome {
  return { status: "garbled", reason };
}

/** The calls the text holds; `absent` when there are none. `textValued`: see {@link RescueOutcome}. */
export function found(calls: ToolCall[], textValued: readonly number[] = []): RescueOutcome {
  if (calls.length === 0) return ABSENT;
  return textValued.length > 0
    ? { status: "found", calls, textValued: [...textValued] }
    : { status: "found", calls };
}
