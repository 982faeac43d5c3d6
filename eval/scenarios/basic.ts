/**
 * The frozen `basic` tier: short, plain scenarios for very small models (2–3 calls, 2–4 tools,
 * one-line descriptions, string parameters, a system prompt that names the order). Each copies a
 * value from the request into the first call and a value from its result into the terminal
 * call, and sets one trap a guardrail handles: a question that invites prose, a request that
 * tempts the terminal call first, a request naming a tool that does not exist, or a tool that
 * fails once with a transient error. Frozen: change a scenario only with a new id, so results
 * stay comparable across models and runs.
 */

import {
  courtPremature,
  fineProse,
  forecastProse,
  gatePremature,
  refundPremature,
  stockProse,
  tablePremature,
  tideProse,
  welcomePremature,
} from "./basic-prose.ts";
import {
  clockUnknownTool,
  consignmentUnknownTool,
  pointsTransient,
  rateUnknownTool,
  shelfTransient,
  vaccineTransient,
} from "./basic-recovery.ts";
import type { EvalScenario } from "./scenario.ts";

export { BasicTrap } from "./basic-traps.ts";

/** The basic tier, frozen: 15 scenarios, in report order. */
export const BASIC_SCENARIOS: readonly EvalScenario[] = [
  forecastProse,
  stockProse,
  fineProse,
  tideProse,
  refundPremature,
  tablePremature,
  welcomePremature,
  gatePremature,
  courtPremature,
  rateUnknownTool,
  clockUnknownTool,
  consignmentUnknownTool,
  pointsTransient,
  shelfTransient,
  vaccineTransient,
];
