/**
 * One sim-model turn: find the reference step the request is at, draw this turn's fault from
 * the profile, and render the reply (a native call, or text in a format real models produce).
 */
import type { ReferenceStep } from "../scenarios/scenario.ts";
import {
  isSuccessfulResult,
  knowsArguments,
  locateInReference,
  observedCalls,
  type ReferencePosition,
} from "./position.ts";
import { FaultKind as Fault, type FaultKind, type FaultProfile, faultForDraw } from "./profiles.ts";
import { drawUniform, hashParts } from "./random.ts";
import { textOf, type WireMessage } from "./wire.ts";

/** A call the sim-model makes. */
export interface SimCall {
  name: string;
  arguments: Record<string, unknown>;
}

/** What the sim-model answers in one turn. */
export type SimTurn =
  | { kind: "calls"; calls: SimCall[]; content: string | null; fault: FaultKind | null; step: number }
  | { kind: "text"; content: string; fault: FaultKind | null; step: number }
  /** The terminal tool already succeeded: the final answer, so an outside loop stops. */
  | { kind: "final"; content: string; fault: null; step: number };

/** Inputs of one turn. */
export interface TurnInput {
  scenarioId: string;
  reference: readonly ReferenceStep[];
  profile: FaultProfile;
  seed: number;
  messages: readonly WireMessage[];
  /** Names of the tools the request offers (a hallucinated name never collides with one). */
  toolNames?: readonly string[];
}

/**
 * Plan the reply to a request. Deterministic: the same seed, scenario, turn number and last
 * message always give the same reply.
 * @example planTurn({ scenarioId: "basic_2step", reference, profile: FAULT_PROFILES.clean, seed: 1, messages })
 */
export function planTurn(input: TurnInput): SimTurn {
  const { reference, messages } = input;
  const last = reference.length - 1;
  const finished = finishedTerminal(messages, reference);
  if (finished !== null) return { kind: "final", content: finished, fault: null, step: last };
  const position = locateInReference(messages, reference);
  const step = Math.min(position.corrected ? position.firstMissing : position.next, last);
  const lastText = messages.length > 0 ? textOf(messages[messages.length - 1] as WireMessage) : "";
  const draw = drawUniform(input.seed, input.scenarioId, position.turn, hashParts(lastText));
  const scripted = input.profile.script;
  const fault =
    scripted && position.turn < scripted.length
      ? (scripted[position.turn] ?? null)
      : faultForDraw(input.profile, draw);
  const intended = callFor(reference, step, position);
  const thought = reference[step]?.thought ?? null;
  const clean: SimTurn = { kind: "calls", calls: [intended], content: thought, fault: null, step };
  const variant = hashParts(input.seed, position.turn, "variant") % 2;
  switch (fault) {
    case null:
      return clean;
    case Fault.PROSE:
    case Fault.FENCED_JSON:
    case Fault.QWEN_TOOL_CALL:
    case Fault.MISTRAL_TOOL_CALLS:
    case Fault.PYTHONIC_CALL:
    case Fault.MALFORMED_JSON:
      return { kind: "text", content: renderAsText(fault, intended, variant), fault, step };
    case Fault.HALLUCINATED_TOOL:
      return {
        ...clean,
        calls: [{ ...intended, name: hallucinate(intended.name, input.toolNames ?? []) }],
        fault,
      };
    case Fault.PREMATURE_TERMINAL: {
      if (step >= last) return clean;
      const terminal = reference[last] as ReferenceStep;
      return {
        ...clean,
        calls: [{ name: terminal.tool, arguments: guessArguments(terminal.args) }],
        content: null,
        fault,
      };
    }
    case Fault.WRONG_ARG_TYPES: {
      const wrong = withWrongType(intended.arguments);
      return wrong ? { ...clean, calls: [{ ...intended, arguments: wrong }], fault } : clean;
    }
    case Fault.SKIPPED_STEP:
      if (step >= last) return clean;
      return {
        ...clean,
        calls: [callFor(reference, step + 1, position)],
        content: null,
        fault,
        step: step + 1,
      };
  }
}

/**
 * The final answer once the reference's terminal tool has a successful result in the history
 * (what a model says after its last call), or null while it has none.
 */
function finishedTerminal(
  messages: readonly WireMessage[],
  reference: readonly ReferenceStep[],
): string | null {
  const terminal = reference[reference.length - 1]?.tool;
  const done = observedCalls(messages).find(
    (call) => call.name === terminal && call.result !== undefined && isSuccessfulResult(call.result),
  );
  return done ? `Done: ${terminal} succeeded (${done.result}).` : null;
}

/** The reference call of a step, with guessed arguments when the results it needs are not visible. */
function callFor(reference: readonly ReferenceStep[], index: number, position: ReferencePosition): SimCall {
  const step = reference[index] as ReferenceStep;
  return {
    name: step.tool,
    arguments: knowsArguments(reference, index, position) ? step.args : guessArguments(step.args),
  };
}

/** Placeholder values of the right types: what a model writes for data it never fetched. */
export function guessArguments(args: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(args).map(([key, value]) => {
      if (typeof value === "number") return [key, 0];
      if (typeof value === "boolean") return [key, false];
      if (Array.isArray(value)) return [key, []];
      if (typeof value === "object" && value !== null) return [key, {}];
      return [key, "unknown"];
    }),
  );
}

/** The arguments with the first one's JSON type changed, or null when there are none. */
export function withWrongType(args: Record<string, unknown>): Record<string, unknown> | null {
  const [key] = Object.keys(args);
  if (key === undefined) return null;
  const value = args[key];
  let wrong: unknown;
  if (typeof value === "number" || typeof value === "boolean") wrong = String(value);
  else if (typeof value === "string") wrong = [value];
  else if (value === null) wrong = 0;
  else wrong = JSON.stringify(value);
  return { ...args, [key]: wrong };
}

/**
 * A plausible wrong name for a tool, a `_v2` suffix, never one of `taken`. Not a near miss
 * (camelCase, a namespace): the loop reads those as the tool they mean without a nudge
 * (docs/decisions/019-near-miss-tool-names.md), so they would test nothing here.
 */
export function hallucinate(name: string, taken: readonly string[]): string {
  let candidate = `${name}_v2`;
  while (taken.includes(candidate)) candidate = `${candidate}_v2`;
  return candidate;
}

/** A call written as text in the fault's format. */
export function renderAsText(fault: FaultKind, call: SimCall, variant: number): string {
  const json = JSON.stringify({ name: call.name, arguments: call.arguments });
  switch (fault) {
    case Fault.FENCED_JSON:
      return `I'll call ${call.name}.\n\`\`\`json\n${JSON.stringify({ name: call.name, arguments: call.arguments }, null, 2)}\n\`\`\``;
    case Fault.QWEN_TOOL_CALL:
      return `<tool_call>\n${json}\n</tool_call>`;
    case Fault.MISTRAL_TOOL_CALLS:
      return `[TOOL_CALLS][${json}]`;
    case Fault.PYTHONIC_CALL: {
      const kwargs = Object.entries(call.arguments).map(([key, value]) => `${key}=${pythonLiteral(value)}`);
      return `[${call.name}(${kwargs.join(", ")})]`;
    }
    case Fault.MALFORMED_JSON:
      return variant === 0 ? json.slice(0, Math.max(json.length - 2, 1)) : json.replace(/"/g, "'");
    default:
      return variant === 0
        ? `I'll use ${call.name.replace(/_/g, " ")} to look into this and get back to you.`
        : "Let me check that for you before I answer.";
  }
}

/** A JSON value as a Python literal (JSON's string escapes are Python's too). */
function pythonLiteral(value: unknown): string {
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (Array.isArray(value)) return `[${value.map(pythonLiteral).join(", ")}]`;
  if (typeof value === "object") {
    const entries = Object.entries(value).map(
      ([key, item]) => `${JSON.stringify(key)}: ${pythonLiteral(item)}`,
    );
    return `{${entries.join(", ")}}`;
  }
  return JSON.stringify(value);
}
