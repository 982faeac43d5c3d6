/**
 * The tool-channel replies of a rejected batch, one per call so every call id gets an answer.
 * The workflow machine appends them as role-`tool` messages; the middleware joins them into one
 * Nudge. Pure; the wording lives in prompts/nudges.ts.
 */
import { type ToolSpec, toolJsonSchema } from "../core/tools.ts";
import type { ToolCall } from "../core/types.ts";
import {
  heldPrerequisiteNudge,
  heldTerminalNudge,
  malformedArgumentsNudge,
  notRunNudge,
  prerequisiteNudge,
  stepNudge,
  unknownToolNudge,
} from "../prompts/nudges.ts";
import { callShape } from "./call-shape.ts";
import { type Decision, type HeldCall, runnableCalls } from "./decisions.ts";

/** The decisions that reject a batch on the tool channel. */
export type RejectDecision = Extract<
  Decision,
  {
    kind:
      | "unknown_tools"
      | "malformed_args"
      | "malformed_args_exhausted"
      | "premature"
      | "premature_exhausted"
      | "prerequisite"
      | "prerequisite_exhausted";
  }
>;

/**
 * One reply per call of a rejected batch, in call order. With `tools` (the workflow's specs), a
 * premature terminal call's reply writes out the first pending step's call ({@link callShape}),
 * its arguments taken from the terminal call where the names match.
 */
export function rejectionReplies(
  decision: RejectDecision,
  availableTools: readonly string[],
  tools: readonly ToolSpec[] = [],
): string[] {
  const reply = replierFor(decision, availableTools, tools);
  return decision.calls.map((call, index) => reply(call, index));
}

function replierFor(
  decision: RejectDecision,
  availableTools: readonly string[],
  tools: readonly ToolSpec[],
): (call: ToolCall, index: number) => string {
  switch (decision.kind) {
    case "unknown_tools": {
      const reason = `it called unknown tool ${decision.unknown.map((name) => `'${name}'`).join(", ")}`;
      return (call) =>
        decision.unknown.includes(call.tool)
          ? unknownToolNudge(call.tool, availableTools)
          : notRunNudge(call.tool, reason);
    }
    case "malformed_args":
    case "malformed_args_exhausted": {
      const reason = `the arguments of ${decision.malformed.map((call) => `'${call.tool}'`).join(", ")} were not a JSON object`;
      return (call, index) => {
        const malformed = decision.malformed.find((candidate) => candidate.index === index);
        return malformed
          ? malformedArgumentsNudge(call.tool, malformed.reason)
          : `[ToolError] ${notRunNudge(call.tool, reason)}`;
      };
    }
    case "premature":
    case "premature_exhausted": {
      const reason = `${decision.terminalTool} was called before the required steps`;
      const step = tools.find((tool) => tool.name === decision.pending[0]);
      return (call) =>
        call.tool === decision.terminalTool
          ? stepNudge(
              decision.terminalTool,
              decision.pending,
              decision.tier,
              step && callShape(step.name, toolJsonSchema(step), call.args),
            )
          : `[StepEnforcementError] ${notRunNudge(call.tool, reason)}`;
    }
    case "prerequisite":
    case "prerequisite_exhausted": {
      const reason = `${decision.violations.map((violation) => violation.toolName).join(", ")} lacked prerequisites`;
      return (call) => {
        const violation = decision.violations.find((candidate) => candidate.toolName === call.tool);
        return violation
          ? prerequisiteNudge(call.tool, violation.described)
          : `[PrereqError] ${notRunNudge(call.tool, reason)}`;
      };
    }
  }
}

/**
 * The reply to each held call of a batch (ADR 039), in the order of `held`: which of the batch's
 * calls run instead, and for a premature terminal call, which required steps stay pending after
 * them.
 */
export function heldReplies(calls: readonly ToolCall[], held: readonly HeldCall[]): string[] {
  const running = [...new Set(runnableCalls(calls, held).map((call) => call.tool))];
  return held.map((entry) => {
    const tool = calls[entry.index]?.tool ?? "";
    if (entry.kind === "prerequisite") return heldPrerequisiteNudge(tool, entry.waitsFor);
    const later = entry.waitsFor.filter((step) => !running.includes(step));
    return heldTerminalNudge(tool, running, later);
  });
}
