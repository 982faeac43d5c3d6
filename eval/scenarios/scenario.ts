/**
 * The eval scenario: a workflow with deterministic tools, a user message, budgets, a reference
 * solution (the ideal call sequence) and validators of the answer and of the final tool state.
 */
import type { Workflow } from "../../src/core/workflow.ts";

/**
 * Scenario categories, one file each under `eval/scenarios/`. `basic` is the frozen tier for very
 * small models (`--tags basic` runs only it).
 */
export const ScenarioCategory = {
  BASIC: "basic",
  PLUMBING: "plumbing",
  MODEL_QUALITY: "model_quality",
  REASONING: "reasoning",
  COMPACTION: "compaction",
} as const;
export type ScenarioCategory = (typeof ScenarioCategory)[keyof typeof ScenarioCategory];

/** One call of the reference solution (one LLM iteration). */
export interface ReferenceStep {
  tool: string;
  args: Record<string, unknown>;
  /** What a model might say along with the call (sent as reasoning by the sim-model). */
  thought?: string;
  /**
   * Indexes of earlier reference steps whose results this call's arguments come from. Default:
   * the step before (none for the first). `[]` when the arguments come from the user message.
   */
  needs?: readonly number[];
}

/** The terminal call a run ended with. */
export interface TerminalCall {
  tool: string;
  args: Record<string, unknown>;
}

/** A fresh workflow for one run; stateful scenarios also return a check of their tools' state. */
export interface ScenarioInstance {
  workflow: Workflow;
  /** The problem with the final tool state, or null when it is as expected. */
  checkState?: () => string | null;
}

/** An eval scenario. Everything but `build()` is plain data. */
export interface EvalScenario {
  id: string;
  category: ScenarioCategory;
  description: string;
  tags: readonly string[];
  userMessage: string;
  /** The context budget the run's ContextManager gets, and the sim-model's context window. */
  budgetTokens: number;
  maxIterations: number;
  /** LLM calls a perfect model needs from where the run starts. */
  idealIterations: number;
  reference: readonly ReferenceStep[];
  /** Start from a persisted snapshot taken after this many reference steps (0: a fresh run). */
  startAfterSteps: number;
  /** Tools hold per-run state that `checkState` validates. */
  stateful: boolean;
  /** A fresh workflow (and fresh tool state) for one run. */
  build(): ScenarioInstance;
  /** The problem with the terminal call's arguments, or null when they are correct. */
  checkAnswer(call: TerminalCall): string | null;
}

/** What `defineScenario` needs; the rest is derived. */
export interface ScenarioSpec {
  id: string;
  category: ScenarioCategory;
  description: string;
  tags?: readonly string[];
  userMessage: string;
  budgetTokens?: number;
  maxIterations?: number;
  /** Default: the reference's length minus `startAfterSteps`. */
  idealIterations?: number;
  reference: readonly ReferenceStep[];
  startAfterSteps?: number;
  stateful?: boolean;
  build(): ScenarioInstance;
  checkAnswer(call: TerminalCall): string | null;
}

/** Default context budget of scenarios that are not about compaction. */
export const DEFAULT_BUDGET_TOKENS = 8192;

/**
 * Define a scenario: tags get the category (and `stateful`), the ideal iteration count defaults
 * to the reference's length, and the iteration limit to the ideal plus slack for recovery.
 */
export function defineScenario(spec: ScenarioSpec): EvalScenario {
  const startAfterSteps = spec.startAfterSteps ?? 0;
  const idealIterations = spec.idealIterations ?? spec.reference.length - startAfterSteps;
  const stateful = spec.stateful ?? false;
  const tags = [...new Set([spec.category, ...(stateful ? ["stateful"] : []), ...(spec.tags ?? [])])];
  return {
    id: spec.id,
    category: spec.category,
    description: spec.description,
    tags,
    userMessage: spec.userMessage,
    budgetTokens: spec.budgetTokens ?? DEFAULT_BUDGET_TOKENS,
    maxIterations: spec.maxIterations ?? Math.max(10, idealIterations + 6),
    idealIterations,
    reference: spec.reference,
    startAfterSteps,
    stateful,
    build: spec.build,
    checkAnswer: spec.checkAnswer,
  };
}

/** The indexes of the reference steps a step's arguments depend on. */
export function stepNeeds(reference: readonly ReferenceStep[], index: number): readonly number[] {
  return reference[index]?.needs ?? (index > 0 ? [index - 1] : []);
}
