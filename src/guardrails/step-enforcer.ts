/**
 * StepEnforcer: required steps before the terminal tool, with escalating nudges, and tool
 * prerequisites. Wraps the pure step-state functions.
 */
import type { Prerequisite, ToolSpec } from "../core/tools.ts";
import type { ToolCall } from "../core/types.ts";
import {
  decidePremature,
  decidePrerequisites,
  findHeldTerminal,
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
   * `hold`: a batch calling the terminal tool with a pending step runs the other calls and holds
   * the terminal call back ({@link StepEnforcer.hold}). Default `reject`.
   */
  prematureTerminal?: "reject" | "hold";
}

/** A batch whose terminal calls are held back: what runs, what waits, and the reply to the held calls. */
export interface HeldBatch {
  /** The calls to run, in batch order. */
  run: ToolCall[];
  /** The held terminal calls; answer each id with `nudge.content` on the tool channel. */
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
  readonly prematureTerminal: "reject" | "hold";
  #progress: StepProgress = createStepProgress();
  #premature = 0;
  #prereq = 0;

  constructor(options: StepEnforcerOptions) {
    this.requiredSteps = [...options.requiredSteps];
    this.terminalTools = [...options.terminalTools];
    this.toolPrerequisites = options.toolPrerequisites ?? {};
    this.tools = options.tools ?? [];
    this.prematureTerminal = options.prematureTerminal ?? "reject";
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
   * With `prematureTerminal: "hold"`, split a batch that calls the terminal tool together with a
   * pending step: the calls to run and the terminal calls held back, with their reply. Null when
   * nothing is held (then {@link check} decides). Counts no premature attempt.
   */
  hold(calls: readonly ToolCall[]): HeldBatch | null {
    const held = findHeldTerminal(calls, this, { progress: this.#progress });
    if (!held) return null;
    const content = heldReplies(calls, held).join("\n");
    return {
      run: runnableCalls(calls, held),
      held: held.indices.map((index) => calls[index] as ToolCall),
      nudge: { role: "tool", content, kind: "step", tier: 0 },
    };
  }

  /**
   * Check a batch for calls whose prerequisites are unmet; one violation blocks the batch.
   * `batch`: the whole batch the nudge answers, when `calls` is the part of it that would run.
   */
  checkPrerequisites(calls: readonly ToolCall[], batch: readonly ToolCall[] = calls): StepCheck {
    const violation = decidePrerequisites(
      [...calls],
      { prerequisites: this.toolPrerequisites, maxPrereqViolations: this.maxPrereqViolations },
      {
        progress: this.#progress,
        prereqViolations: this.#prereq,
      },
    );
    if (!violation) return { nudge: null, needsNudge: false };
    const decision = { ...violation, calls: [...batch] };
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
