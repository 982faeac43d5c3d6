/**
 * StepEnforcer: required steps before the terminal tool, with escalating nudges, and tool
 * prerequisites. Wraps the pure step-state functions.
 */
import type { Prerequisite, ToolSpec } from "../core/tools.ts";
import type { ToolCall } from "../core/types.ts";
import {
  decidePremature,
  decidePrerequisites,
  findHeldCalls,
  isBudgetExceeded,
  MAX_STEP_TIER,
  runnableCalls,
} from "./decisions.ts";
import { assertCount } from "./error-tracker.ts";
import { DEFAULT_LIMITS } from "./limits.ts";
import type { Nudge } from "./nudge.ts";
import { heldReplies, rejectionReplies } from "./replies.ts";
import {
  createStepProgress,
  pendingSteps,
  recordStep,
  type StepProgress,
  stepSummaryHint,
} from "./step-state.ts";
/** Result of a step or prerequisite check. */
export interface StepCheck {
  nudge: Nudge | null;
  needsNudge: boolean;
}

/** Options of `StepEnforcer`. */
export interface StepEnforcerOptions {
  requiredSteps: readonly string[];
  terminalTools: readonly string[];
  toolPrerequisites?: Readonly<Record<string, readonly Prerequisite[]>>;
  /** Premature terminal attempts tolerated in a row; the next one exhausts it. */
  maxPrematureAttempts?: number;
  /** Prerequisite violations tolerated in a row; the next one exhausts it. */
  maxPrereqViolations?: number;
  /** The tools' specs: with them, a premature terminal call's nudge writes out the pending step's call. */
  tools?: readonly ToolSpec[];
  /**
   * `hold`: a batch whose early calls (a terminal call while steps are pending, a call before its
   * prerequisite) wait for its other calls runs those and holds the early ones back
   * ({@link StepEnforcer.hold}). Default `reject`.
   */
  earlyCalls?: "reject" | "hold";
}

/** A batch whose early calls are held back: what runs, what waits, and the reply to the held calls. */
export interface HeldBatch {
  /** The calls to run, in batch order. */
  run: ToolCall[];
  /** The held calls; answer their ids with `nudge.content` on the tool channel. */
  held: ToolCall[];
  nudge: Nudge;
}

export { MAX_STEP_TIER };

/**
 * Tracks required steps and prerequisites; `check` and `checkPrerequisites` count consecutive
 * violations and return the nudge to send. Stateful: one per run.
 */
export class StepEnforcer {
  readonly requiredSteps: readonly string[];
  readonly terminalTools: readonly string[];
  readonly toolPrerequisites: Readonly<Record<string, readonly Prerequisite[]>>;
  readonly maxPrematureAttempts: number;
  readonly maxPrereqViolations: number;
  readonly tools: readonly ToolSpec[];
  readonly earlyCalls: "reject" | "hold";
  #progress: StepProgress = createStepProgress();
  #premature = 0;
  #prereq = 0;

  constructor(options: StepEnforcerOptions) {
    this.requiredSteps = [...options.requiredSteps];
    this.terminalTools = [...options.terminalTools];
    this.toolPrerequisites = options.toolPrerequisites ?? {};
    this.tools = options.tools ?? [];
    this.earlyCalls = options.earlyCalls ?? "reject";
    this.maxPrematureAttempts = assertCount(
      "maxPrematureAttempts",
      options.maxPrematureAttempts ?? DEFAULT_LIMITS.maxPrematureAttempts,
    );
    this.maxPrereqViolations = assertCount(
      "maxPrereqViolations",
      options.maxPrereqViolations ?? DEFAULT_LIMITS.maxPrereqViolations,
    );
  }

  /**
   * Check a batch for a terminal call made while required steps are pending. Each premature
   * batch counts one attempt; the nudge escalates over three tiers (one reply per call, joined).
   */
  check(calls: readonly ToolCall[]): StepCheck {
    const decision = decidePremature([...calls], this, {
      progress: this.#progress,
      prematureAttempts: this.#premature,
    });
    if (!decision) return { nudge: null, needsNudge: false };
    this.#premature = decision.kind === "premature" ? decision.attempt : decision.attempts;
    const content = rejectionReplies(decision, [], this.tools).join("\n");
    return { nudge: { role: "tool", content, kind: "step", tier: decision.tier }, needsNudge: true };
  }

  /**
   * With `earlyCalls: "hold"`, split a batch whose early calls (a terminal call while steps are
   * pending, a call before its prerequisite) wait for calls of the same batch: the calls to run and
   * the held ones, with their reply. Null when nothing is held (then {@link check} and
   * {@link checkPrerequisites} decide). Counts no premature attempt or violation.
   */
  hold(calls: readonly ToolCall[]): HeldBatch | null {
    const held = findHeldCalls(
      calls,
      { ...this, prerequisites: this.toolPrerequisites },
      { progress: this.#progress },
    );
    if (!held) return null;
    const content = heldReplies(calls, held).join("\n");
    const kind = held.some((entry) => entry.kind === "premature") ? "step" : "prerequisite";
    return {
      run: runnableCalls(calls, held),
      held: held.map((entry) => calls[entry.index] as ToolCall),
      nudge: { role: "tool", content, kind, tier: 0 },
    };
  }

  /** Check a batch for calls whose prerequisites are unmet; one violation blocks the batch. */
  checkPrerequisites(calls: readonly ToolCall[]): StepCheck {
    const decision = decidePrerequisites(
      [...calls],
      { prerequisites: this.toolPrerequisites, maxPrereqViolations: this.maxPrereqViolations },
      {
        progress: this.#progress,
        prereqViolations: this.#prereq,
      },
    );
    if (!decision) return { nudge: null, needsNudge: false };
    this.#prereq = decision.kind === "prerequisite" ? decision.attempt : decision.attempts;
    const content = rejectionReplies(decision, []).join("\n");
    return { nudge: { role: "tool", content, kind: "prerequisite", tier: this.#prereq }, needsNudge: true };
  }

  /** Record a successful call. */
  record(toolName: string, args: Record<string, unknown> = {}): void {
    this.#progress = recordStep(this.#progress, toolName, args);
  }

  isSatisfied(): boolean {
    return this.pending().length === 0;
  }

  pending(): string[] {
    return pendingSteps(this.requiredSteps, this.#progress);
  }

  resetPremature(): void {
    this.#premature = 0;
  }

  resetPrereqViolations(): void {
    this.#prereq = 0;
  }

  /** `[Steps completed: …]`, the hint compaction keeps. */
  summaryHint(): string {
    return stepSummaryHint(this.#progress);
  }

  get prematureAttempts(): number {
    return this.#premature;
  }

  get prematureExhausted(): boolean {
    return isBudgetExceeded(this.#premature, this.maxPrematureAttempts);
  }

  get prereqViolations(): number {
    return this.#prereq;
  }

  get prereqExhausted(): boolean {
    return isBudgetExceeded(this.#prereq, this.maxPrereqViolations);
  }

  /** Completed tools in first-completion order. */
  get completedSteps(): string[] {
    return [...this.#progress.completedSteps];
  }

  /** The progress record (plain data). */
  get progress(): StepProgress {
    return this.#progress;
  }
}
