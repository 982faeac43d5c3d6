/**
 * Fault profiles of the sim-model: named, seeded per-turn rates of each failure a small model
 * shows when tool calling. Rates are probabilities per model turn and sum to at most 1.
 */

/** Failures the sim-model can inject, each rendered the way real models produce it. */
export const FaultKind = {
  /** Prose instead of a call ("Let me look that up."). Rescue cannot help. */
  PROSE: "prose",
  /** The call as JSON in a ```json fence, as text. Rescue understands it. */
  FENCED_JSON: "fenced_json",
  /** Qwen/Hermes `<tool_call>{…}</tool_call>` as text. Rescue understands it. */
  QWEN_TOOL_CALL: "qwen_tool_call",
  /** Mistral `[TOOL_CALLS][{…}]` as text. Rescue understands it. */
  MISTRAL_TOOL_CALLS: "mistral_tool_calls",
  /** A call written as JSON that never closes or uses single quotes. Rescue must not "repair" it. */
  MALFORMED_JSON: "malformed_json",
  /** A native call to a tool that does not exist (a camelCase or `_v2` variant of the right one). */
  HALLUCINATED_TOOL: "hallucinated_tool",
  /** The terminal tool before the required steps, with guessed arguments. */
  PREMATURE_TERMINAL: "premature_terminal",
  /** The right tool with one argument of the wrong JSON type (`"42"` for 42, `["x"]` for "x"). */
  WRONG_ARG_TYPES: "wrong_arg_types",
  /** Skip the next reference step and play the one after it (guessing data it never fetched). */
  SKIPPED_STEP: "skipped_step",
  /**
   * The call as Llama 3.2 and LFM2 write it, `[name(key="value")]`, as text. Rescue understands it.
   * Last, and in no built-in profile's rates, so the existing profiles draw as before.
   */
  PYTHONIC_CALL: "pythonic_call",
} as const;
export type FaultKind = (typeof FaultKind)[keyof typeof FaultKind];

/** Fault kinds in the order a turn's draw is matched against the cumulative rates. */
export const FAULT_KINDS: readonly FaultKind[] = Object.values(FaultKind);

/** Text faults that `rescueToolCall` is expected to salvage. */
export const RESCUABLE_FAULTS: ReadonlySet<FaultKind> = new Set<FaultKind>([
  FaultKind.FENCED_JSON,
  FaultKind.QWEN_TOOL_CALL,
  FaultKind.MISTRAL_TOOL_CALLS,
  FaultKind.PYTHONIC_CALL,
]);

/** A named fault profile. */
export interface FaultProfile {
  name: string;
  description: string;
  rates: Partial<Record<FaultKind, number>>;
  /**
   * Faults by model turn (0-based), overriding the rates for the turns it covers: for tests and
   * demonstrations that need one fault at one place.
   */
  script?: readonly (FaultKind | null)[];
}

const MIXED_RATES: Partial<Record<FaultKind, number>> = {
  prose: 0.03,
  fenced_json: 0.04,
  qwen_tool_call: 0.04,
  mistral_tool_calls: 0.03,
  malformed_json: 0.02,
  hallucinated_tool: 0.04,
  premature_terminal: 0.04,
  wrong_arg_types: 0.03,
  skipped_step: 0.03,
};

/** Every profile by name. `mixed` is the default. */
export const FAULT_PROFILES: Readonly<Record<string, FaultProfile>> = {
  clean: {
    name: "clean",
    description: "Plays the reference solution with no faults (a sanity baseline).",
    rates: {},
  },
  mixed: {
    name: "mixed",
    description: "Every fault at a low rate (30% of turns): a capable small model on a bad day.",
    rates: MIXED_RATES,
  },
  formats: {
    name: "formats",
    description: "Output-format drift only (30% of turns): calls written as text, some unrescuable.",
    rates: {
      fenced_json: 0.08,
      qwen_tool_call: 0.08,
      mistral_tool_calls: 0.06,
      prose: 0.05,
      malformed_json: 0.03,
    },
  },
  process: {
    name: "process",
    description:
      "Workflow mistakes only (30% of turns): unknown tools, premature answers, bad types, skipped steps.",
    rates: { hallucinated_tool: 0.06, premature_terminal: 0.08, wrong_arg_types: 0.08, skipped_step: 0.08 },
  },
  hostile: {
    name: "hostile",
    description: "Every fault at twice the mixed rate (60% of turns).",
    rates: Object.fromEntries(Object.entries(MIXED_RATES).map(([kind, rate]) => [kind, (rate ?? 0) * 2])),
  },
  none: {
    name: "none",
    description:
      "No faults (the same replies as clean): for checking plumbing, such as an outside agent loop.",
    rates: {},
  },
};

/** The default profile. */
export const DEFAULT_PROFILE = "mixed";

/** Raised for a profile name that does not exist; the message lists the valid ones. */
export class UnknownProfileError extends Error {
  constructor(name: string) {
    super(`Unknown sim-model profile '${name}'. Valid profiles: ${Object.keys(FAULT_PROFILES).join(", ")}`);
    this.name = "UnknownProfileError";
  }
}

/** A profile by name, or an UnknownProfileError. */
export function profileByName(name: string): FaultProfile {
  const profile = FAULT_PROFILES[name];
  if (!profile) throw new UnknownProfileError(name);
  return profile;
}

/** Share of turns with any fault. */
export function totalFaultRate(profile: FaultProfile): number {
  return FAULT_KINDS.reduce((sum, kind) => sum + (profile.rates[kind] ?? 0), 0);
}

/**
 * The fault a turn's uniform draw `u` in [0, 1) selects, or null for a clean turn.
 * @example faultForDraw(FAULT_PROFILES.mixed, 0.01) // "prose"
 */
export function faultForDraw(profile: FaultProfile, u: number): FaultKind | null {
  let cumulative = 0;
  for (const kind of FAULT_KINDS) {
    cumulative += profile.rates[kind] ?? 0;
    if (u < cumulative) return kind;
  }
  return null;
}
