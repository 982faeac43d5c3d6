/**
 * Escalation to a stronger model: after `after` consecutive failures of one kind (the guard
 * counters: retries, tool errors, premature terminal calls, unmet prerequisites) the next LLM call
 * goes to a stronger client; once the streak ends the loop goes back to the first client, unless
 * the tier `stay`s (docs/decisions/018). Pure; the clients themselves stay out of the context.
 */
import type { LLMClient } from "../core/types.ts";
import type { GuardCounters } from "./decisions.ts";

/** The failure kinds a streak can be of, one per guard counter. */
export const FailureKind = {
  RETRIES: "retries",
  TOOL_ERRORS: "tool_errors",
  PREMATURE: "premature",
  PREREQUISITE: "prerequisite",
} as const;
export type FailureKind = (typeof FailureKind)[keyof typeof FailureKind];

/** A tier as the run's JSON config keeps it (its client is a dep). */
export interface EscalationRule {
  /** Consecutive failures of one kind that send the next call to this tier. */
  after: number;
  /** Recorded for each call it serves. */
  name: string;
  /** Once reached, later calls stay on this tier (or a higher one) even after the streak ends. */
  stay: boolean;
}

/** Why the loop switched clients: a failure streak (up) or its end (back down). */
export type EscalationReason = FailureKind | "recovered";

/** One switch between clients, before LLM call `iteration` (1-based). */
export interface EscalationSwitch {
  iteration: number;
  from: string;
  to: string;
  reason: EscalationReason;
  /** The streak's length when it switched (0 when it switched back). */
  streak: number;
}

/** What a run records about its clients. JSON. */
export interface EscalationRecord {
  /** The tier serving the current call: 0 is the runner's `client`, 1… the escalation tiers. */
  tier: number;
  /** The name of the client that served each LLM call, in order (`base` for the runner's `client`). */
  servedBy: string[];
  switches: EscalationSwitch[];
}

/** The name calls to the runner's own client are recorded under. */
export const BASE_CLIENT_NAME = "base";

/** An empty record, on the base client. */
export function createEscalationRecord(): EscalationRecord {
  return { tier: 0, servedBy: [], switches: [] };
}

/** The longest running failure streak and its kind, or null when nothing is failing. */
export function failureStreak(counters: GuardCounters): { kind: FailureKind; count: number } | null {
  const streaks: [FailureKind, number][] = [
    [FailureKind.RETRIES, counters.consecutiveRetries],
    [FailureKind.TOOL_ERRORS, counters.consecutiveToolErrors],
    [FailureKind.PREMATURE, counters.prematureAttempts],
    [FailureKind.PREREQUISITE, counters.prereqViolations],
  ];
  const [kind, count] = streaks.reduce((best, streak) => (streak[1] > best[1] ? streak : best));
  return count > 0 ? { kind, count } : null;
}

/**
 * The record after choosing the client of LLM call `iteration`: the highest tier whose `after`
 * the current streak reaches, or the current tier when it `stay`s and is higher; a change is
 * recorded as a switch. `rules` are in rising `after` order.
 */
export function escalateFor(
  record: EscalationRecord,
  rules: readonly EscalationRule[],
  counters: GuardCounters,
  iteration: number,
): EscalationRecord {
  const streak = failureStreak(counters);
  let tier = 0;
  rules.forEach((rule, index) => {
    if (streak !== null && streak.count >= rule.after) tier = index + 1;
  });
  if (tier < record.tier && rules[record.tier - 1]?.stay) tier = record.tier;
  const nameOf = (index: number) => (index === 0 ? BASE_CLIENT_NAME : (rules[index - 1]?.name ?? ""));
  const servedBy = [...record.servedBy, nameOf(tier)];
  if (tier === record.tier) return { ...record, servedBy };
  const change: EscalationSwitch = {
    iteration,
    from: nameOf(record.tier),
    to: nameOf(tier),
    reason: tier > record.tier && streak !== null ? streak.kind : "recovered",
    streak: tier > record.tier ? (streak?.count ?? 0) : 0,
  };
  return { tier, servedBy, switches: [...record.switches, change] };
}

/** How many times a run escalated (switches up). */
export function escalationCount(record: EscalationRecord): number {
  return record.switches.filter((change) => change.reason !== "recovered").length;
}

/**
 * A stronger client the loop switches to after repeated failures.
 * @example
 * escalation: { after: 2, client: new OpenAICompatibleClient({ baseUrl: strongUrl, model: "qwen2.5-coder-7b" }) }
 */
export interface EscalationTier {
  /** Consecutive failures of one kind (an integer ≥ 1) after which the next LLM call goes here. */
  after: number;
  client: LLMClient;
  /** Recorded for each call it serves (`EscalationRecord.servedBy`). Default `escalation-<n>`. */
  name?: string;
  /**
   * Default false: once the failure streak ends (a clean call or batch), calls go back to the
   * runner's `client`. True: the rest of the run stays on this tier (or a higher one).
   */
  stay?: boolean;
}

/** `WorkflowRunnerOptions.escalation`: one tier, or several in rising `after` order. */
export type EscalationOption = EscalationTier | readonly EscalationTier[];
