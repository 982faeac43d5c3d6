/**
 * The default strategy: three escalating, deterministic phases with a fixed priority order.
 */
import type { Message } from "../core/messages.ts";
import {
  type CompactOptions,
  type CompactResult,
  type CompactStrategy,
  resolveEstimators,
} from "./compact-strategy.ts";
import { newestIterations, protectedMask } from "./iterations.ts";
import { withStepSummary } from "./step-summary.ts";
import { type TieredPhase, tieredAction } from "./tiered-action.ts";
import { hasToolCalls, pairToolMessages, type ToolPairing } from "./tool-pairing.ts";
import { DROPPED_RESULT_CONTENT, stubToolResult, truncateToolResult } from "./tool-result-compaction.ts";
import { assertInteger } from "./validate-option.ts";

/** Options of {@link TieredCompact}. */
export interface TieredCompactOptions {
  /** Loop iterations (distinct `metadata.stepIndex` values, newest last) kept in full. Default 2. */
  keepRecent?: number;
  /** Characters an older tool result keeps in phase 1. Default 200. */
  truncateChars?: number;
}

interface Plan {
  protectedAt: boolean[];
  pairing: ToolPairing;
  /** Blocked batches whose call and nudges all lie outside the protected window. */
  droppableBlocked: ReadonlySet<number>;
  /** Stubs by message index, made once and shared by phases 2 and 3. */
  stubs: (Message | undefined)[];
}

interface PhaseOutput {
  messages: Message[];
  changed: boolean;
  stubbed: boolean;
}

const PHASES: readonly TieredPhase[] = [1, 2, 3];

/**
 * Three phases, each run only when the previous one left the history over `triggerTokens`:
 * 1. drop nudges; truncate older tool results to `truncateChars` + `[Truncated — N chars removed]`;
 * 2. also replace older tool results by a short stub answer (`[Result dropped by compaction]`);
 * 3. also drop reasoning and text responses.
 *
 * Never cut: system prompts, user inputs, summaries, tool-call messages of executed batches
 * (kept in full), and every message of the `keepRecent` newest iterations. Messages without a
 * `stepIndex` (seeded history) are outside that window. A blocked batch (a tool-call message
 * whose every call was answered only by nudges) never ran, so it goes with its nudges; a
 * nudge that answers a call of an executed batch stays, so no call loses its answer.
 * From phase 2 on, when results are stubbed and `stepHint` is given, a step summary (role
 * `user`, type SUMMARY) right after the first user input carries it; an existing one is updated.
 *
 * Phase 1 applies whenever it is called, as in the seeds: deciding *whether* to compact is the
 * caller's (`ContextManager` calls it only over its threshold); `triggerTokens` only decides
 * whether to escalate past a phase. Returns the phase it reached: the first phase whose result is
 * at or under `triggerTokens`, else 3 — also when a phase had nothing left to cut (the event then
 * shows `tokensAfter` equal to `tokensBefore`: the history is over budget and cannot shrink).
 * Never phase 0. Never raises the estimate.
 * @example new TieredCompact({ keepRecent: 4 }).compact(history, 6144, { stepHint: "[Steps completed: search]" })
 */
export class TieredCompact implements CompactStrategy {
  readonly keepRecent: number;
  readonly truncateChars: number;

  constructor({ keepRecent = 2, truncateChars = 200 }: TieredCompactOptions = {}) {
    assertInteger("TieredCompact", "keepRecent", keepRecent, 0);
    assertInteger("TieredCompact", "truncateChars", truncateChars, 0);
    this.keepRecent = keepRecent;
    this.truncateChars = truncateChars;
  }

  compact(messages: readonly Message[], triggerTokens: number, opts: CompactOptions = {}): CompactResult {
    const estimate = resolveEstimators(opts);
    const tokensBefore = estimate.input(messages);
    // No early return under the trigger: being called is the decision to compact (the seeds' rule).
    const plan = planCompaction(messages, this.keepRecent);
    let kept: Message[] = [...messages];
    for (const phase of PHASES) {
      const output = this.#applyPhase(messages, plan, phase);
      let compacted = output.messages;
      if (phase >= 2 && output.stubbed) {
        compacted = withStepSummary(compacted, opts.stepHint ?? "", estimate.candidate, tokensBefore);
      }
      // A phase that cuts nothing new keeps the previous phase's output (the same array, if unchanged).
      if (output.changed || compacted !== output.messages) kept = compacted;
      if (phase === 3 || estimate.candidate(kept) <= triggerTokens) return { messages: kept, phase };
    }
    return { messages: kept, phase: 3 };
  }

  #applyPhase(messages: readonly Message[], plan: Plan, phase: TieredPhase): PhaseOutput {
    const out: Message[] = [];
    let changed = false;
    let stubbed = false;
    for (let index = 0; index < messages.length; index++) {
      const message = messages[index]!;
      const kept = this.#compactMessage(message, index, plan, phase);
      if (kept === message) {
        out.push(message);
        continue;
      }
      changed = true;
      if (kept === undefined) continue;
      if (kept.content === DROPPED_RESULT_CONTENT) stubbed = true;
      out.push(kept);
    }
    return { messages: out, changed, stubbed };
  }

  /** The message as this phase leaves it, or undefined when dropped. */
  #compactMessage(message: Message, index: number, plan: Plan, phase: TieredPhase): Message | undefined {
    if (plan.protectedAt[index]) return message;
    const { blocked, ownerOf } = plan.pairing;
    if (hasToolCalls(message)) {
      return plan.droppableBlocked.has(index) ? undefined : message;
    }
    const owner = ownerOf[index]!;
    if (owner >= 0 && blocked.has(owner)) {
      return plan.droppableBlocked.has(owner) ? undefined : message;
    }
    switch (tieredAction(message, phase)) {
      case "keep":
        return message;
      case "truncate":
        return truncateToolResult(message, this.truncateChars);
      case "stub":
        plan.stubs[index] ??= stubToolResult(message);
        return plan.stubs[index];
      case "drop":
        // An answer to a call of an executed batch must stay, or that call is left unanswered.
        return owner < 0 ? undefined : message;
    }
  }
}

function planCompaction(messages: readonly Message[], keepRecent: number): Plan {
  const protectedAt = protectedMask(messages, newestIterations(messages, keepRecent));
  const pairing = pairToolMessages(messages);
  const droppableBlocked = new Set<number>();
  for (const owner of pairing.blocked) {
    const answers = pairing.answersOf.get(owner) ?? [];
    if (!protectedAt[owner] && answers.every((index) => !protectedAt[index])) droppableBlocked.add(owner);
  }
  return { protectedAt, pairing, droppableBlocked, stubs: [] };
}
