/**
 * The runner's options for per-step tool subsets and escalation, checked and split into the JSON
 * the machine's config keeps (rules) and the behaviour its deps carry (clients, the user's
 * function). docs/decisions/018.
 */
import type { LLMClient } from "../core/types.ts";
import {
  BASE_CLIENT_NAME,
  type EscalationOption,
  type EscalationRule,
  type EscalationTier,
} from "../guardrails/escalation.ts";
import { ToolSubsets } from "../guardrails/tool-subset.ts";

/** Escalation split into the config's rules and the deps' clients (same order). */
export interface ResolvedEscalation {
  rules: EscalationRule[];
  clients: LLMClient[];
}

/**
 * Check an `escalation` option: `RangeError` naming the tier for an `after` that is not an
 * integer ≥ 1 or not above the tier before it, a tier without a client, or a duplicate or
 * reserved name.
 */
export function resolveEscalation(owner: string, option: EscalationOption): ResolvedEscalation {
  const tiers: readonly EscalationTier[] = Array.isArray(option) ? option : [option as EscalationTier];
  if (tiers.length === 0) throw new RangeError(`${owner}: escalation needs at least one tier`);
  const rules: EscalationRule[] = [];
  tiers.forEach((tier, index) => {
    const where = `${owner}: escalation tier ${index + 1}`;
    const previous = rules[index - 1]?.after ?? 0;
    if (!Number.isInteger(tier?.after) || tier.after < 1 || tier.after <= previous) {
      throw new RangeError(
        `${where}: after must be an integer ≥ ${previous + 1} (tiers in rising order), got ${String(tier?.after)}`,
      );
    }
    if (typeof tier.client?.send !== "function")
      throw new RangeError(`${where}: client must be an LLMClient`);
    const name = tier.name ?? `escalation-${index + 1}`;
    if (name === BASE_CLIENT_NAME || rules.some((rule) => rule.name === name)) {
      throw new RangeError(`${where}: name '${name}' is taken (the base client or another tier)`);
    }
    rules.push({ after: tier.after, name, stay: tier.stay ?? false });
  });
  return { rules, clients: tiers.map((tier) => tier.client) };
}

/** Check a `toolSubsets` option: `RangeError` unless it is `all` or `steps`. */
export function assertToolSubsets(owner: string, value: unknown): ToolSubsets {
  const valid = Object.values(ToolSubsets) as unknown[];
  if (valid.includes(value)) return value as ToolSubsets;
  throw new RangeError(
    `${owner}: toolSubsets must be one of ${valid.map((option) => `"${String(option)}"`).join(", ")}, got ${JSON.stringify(value)}`,
  );
}

/** The escalation tiers' clients of an options object, for callers that manage clients (the queue worker). */
export function escalationClientsOf(option: EscalationOption | undefined): LLMClient[] {
  if (option === undefined) return [];
  return (Array.isArray(option) ? option : [option as EscalationTier]).map((tier) => tier.client);
}
