/**
 * Loop configurations under test: the ablation presets (which guardrails are on) and the peer
 * loop (the Vercel AI SDK's `generateText` tool loop), each a plain JSON record for the rows.
 */
import { UnknownSelectionError } from "./scenarios/index.ts";

/** Compaction strategies `--compact-strategy` can pick. */
export const CompactStrategyName = { TIERED: "tiered", SLIDING: "sliding", NONE: "none" } as const;
export type CompactStrategyName = (typeof CompactStrategyName)[keyof typeof CompactStrategyName];

/**
 * Which agent loop runs the scenario. `reference` is this library's loop with the model's answers
 * replaced by the scenario's reference calls: the ideal run, whose prompts the backend still
 * evaluates, so its token count is the yardstick of the others (see `eval/run/reference-client.ts`).
 */
export const LoopKind = { FORGE: "forge", AI_SDK: "ai_sdk", REFERENCE: "reference" } as const;
export type LoopKind = (typeof LoopKind)[keyof typeof LoopKind];

/** One configuration a scenario runs under. */
export interface LoopConfig {
  name: string;
  loop: LoopKind;
  rescueEnabled: boolean;
  /** 0 = no retry or unknown-tool nudges: the first failure ends the run. */
  maxRetriesPerStep: number;
  stepEnforcement: boolean;
  /** 0 = no error recovery: the first failing tool batch ends the run; null = no budget (peer). */
  maxToolErrors: number | null;
  compaction: CompactStrategyName;
  /** `steps`: each request offers only the tools that can make progress now (`toolSubsets`). */
  toolSubsets?: "all" | "steps";
  /** `hold`: a terminal call in a batch with pending steps is held back, the steps run (ADR 039). */
  earlyCalls?: "reject" | "hold";
  /**
   * Escalation after `after` consecutive failures of one kind to the backend's stronger client
   * (the sim-model: the same scenario under `profile`, default `clean`).
   */
  escalation?: { after: number; profile: string };
  /**
   * `false`: a retry after a prose answer is sent without `toolChoice: "required"`
   * (`forceToolChoiceOnRetry`); absent = the runner's default, forced.
   */
  forceToolChoiceOnRetry?: boolean;
}

const REFORGED: LoopConfig = {
  name: "reforged",
  loop: LoopKind.FORGE,
  rescueEnabled: true,
  maxRetriesPerStep: 3,
  stepEnforcement: true,
  maxToolErrors: 2,
  compaction: CompactStrategyName.TIERED,
};

/** The ablation presets: reforged (all on), one guardrail off each, and bare (all off). */
export const ABLATION_PRESETS: Readonly<Record<string, LoopConfig>> = {
  reforged: REFORGED,
  no_rescue: { ...REFORGED, name: "no_rescue", rescueEnabled: false },
  no_nudge: { ...REFORGED, name: "no_nudge", maxRetriesPerStep: 0 },
  no_steps: { ...REFORGED, name: "no_steps", stepEnforcement: false },
  no_recovery: { ...REFORGED, name: "no_recovery", maxToolErrors: 0 },
  no_compact: { ...REFORGED, name: "no_compact", compaction: CompactStrategyName.NONE },
  bare: {
    name: "bare",
    loop: LoopKind.FORGE,
    rescueEnabled: false,
    maxRetriesPerStep: 0,
    stepEnforcement: false,
    maxToolErrors: 0,
    compaction: CompactStrategyName.NONE,
  },
};

/**
 * Reforged with one loop control changed, named with `--ablation` (not part of `all`, which is
 * the ablation of the guardrails): per-step tool subsets and escalation to a stronger model after
 * 2 consecutive failures of one kind (docs/decisions/018; the backend must offer one), the
 * premature terminal call held back from a batch that calls pending steps (docs/decisions/039), and
 * `no_force`, retries after a prose answer sent without `toolChoice: "required"`.
 */
export const LOOP_CONTROL_PRESETS: Readonly<Record<string, LoopConfig>> = {
  "reforged+subsets": { ...REFORGED, name: "reforged+subsets", toolSubsets: "steps" },
  "reforged+hold": { ...REFORGED, name: "reforged+hold", earlyCalls: "hold" },
  "reforged+escalation": {
    ...REFORGED,
    name: "reforged+escalation",
    escalation: { after: 2, profile: "clean" },
  },
  no_force: { ...REFORGED, name: "no_force", forceToolChoiceOnRetry: false },
};

/**
 * The peer: what a TypeScript user would otherwise write, `generateText` with tools and
 * `stopWhen: [stepCountIs(maxIterations), hasToolCall(terminal)]`. Its own behaviour on tool
 * errors (they go back to the model) counts as recovery; it has no rescue, nudges, step
 * enforcement or compaction.
 */
export const AI_SDK_CONFIG: LoopConfig = {
  name: "ai_sdk",
  loop: LoopKind.AI_SDK,
  rescueEnabled: false,
  maxRetriesPerStep: 0,
  stepEnforcement: false,
  maxToolErrors: null,
  compaction: CompactStrategyName.NONE,
};

/**
 * The ideal reference run: the reforged loop playing the scenario's reference calls (`--ideal`).
 * Its rows are the token yardstick of the report's `×ideal` column, not a config under test.
 */
export const IDEAL_CONFIG: LoopConfig = { ...REFORGED, name: "ideal", loop: LoopKind.REFERENCE };

/**
 * The configurations to run: the named presets (`all` = every preset), plus the AI SDK loop
 * when `peer` is set and the ideal reference run when `ideal` is. `compactStrategy` replaces the strategy of presets that compact.
 * Throws `UnknownSelectionError` listing the valid presets.
 */
export function resolveConfigs(
  presets: readonly string[],
  options: { peer?: boolean; ideal?: boolean; compactStrategy?: CompactStrategyName } = {},
): LoopConfig[] {
  const names = presets.includes("all") ? Object.keys(ABLATION_PRESETS) : [...new Set(presets)];
  const extras = new Map([AI_SDK_CONFIG, IDEAL_CONFIG].map((config) => [config.name, config]));
  const presetOf = (name: string) => ABLATION_PRESETS[name] ?? LOOP_CONTROL_PRESETS[name];
  const unknown = names.filter((name) => presetOf(name) === undefined && !extras.has(name));
  if (unknown.length > 0) {
    throw new UnknownSelectionError(
      "ablation preset",
      unknown,
      [...Object.keys(ABLATION_PRESETS), ...Object.keys(LOOP_CONTROL_PRESETS), "all", ...extras.keys()],
      "--ablation",
    );
  }
  const configs = names.map((name) => extras.get(name) ?? (presetOf(name) as LoopConfig));
  if (options.peer && !configs.includes(AI_SDK_CONFIG)) configs.push(AI_SDK_CONFIG);
  if (options.ideal && !configs.includes(IDEAL_CONFIG)) configs.push(IDEAL_CONFIG);
  const strategy = options.compactStrategy;
  if (!strategy) return configs;
  return configs.map((config) =>
    config.loop === LoopKind.FORGE && config.compaction !== CompactStrategyName.NONE
      ? { ...config, compaction: strategy }
      : config,
  );
}

/** The label a config is reported under (`reforged`, `reforged+sliding`). */
export function configLabel(config: LoopConfig): string {
  const preset = ABLATION_PRESETS[config.name];
  return preset && preset.compaction !== config.compaction
    ? `${config.name}+${config.compaction}`
    : config.name;
}
