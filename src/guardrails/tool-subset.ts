/**
 * Per-step tool subsets: which tools a request offers the model, derived from the step state.
 * A small model picks better among three tools than among eight; the workflow already knows which
 * tools can make progress now (its pending required steps, their prerequisites, the terminal tool
 * once nothing is pending), so it can show only those (docs/decisions/018). Pure.
 */
import { WorkflowDefinitionError } from "../core/errors.ts";
import { type Prerequisite, prerequisiteTool } from "../core/tools.ts";
import { RESPOND_TOOL_NAME } from "../tools/respond.ts";
import { pendingSteps, type StepProgress } from "./step-state.ts";

/** How each request's tool list is chosen: every tool (`all`, the default) or the step subset. */
export const ToolSubsets = { ALL: "all", STEPS: "steps" } as const;
export type ToolSubsets = (typeof ToolSubsets)[keyof typeof ToolSubsets];

/** The rules the subset is derived from (the run's config). */
export interface SubsetRules {
  toolNames: readonly string[];
  requiredSteps: readonly string[];
  terminalTools: readonly string[];
  prerequisites: Readonly<Record<string, readonly Prerequisite[]>>;
}

/**
 * The tools that can make progress now: the required steps not done yet and their prerequisites
 * (transitively); once none is pending, the terminal tools and theirs; plus `respond` when the
 * workflow has it. In the workflow's tool order.
 * @example
 * stepToolSubset(rules, { completedSteps: ["get_flight_status"], calls: [] })
 * // ["get_gate_info"] while get_gate_info is pending; ["notify_passenger"] once it is done
 */
export function stepToolSubset(rules: SubsetRules, progress: StepProgress): string[] {
  const pending = pendingSteps(rules.requiredSteps, progress);
  const wanted = new Set<string>(pending.length > 0 ? pending : rules.terminalTools);
  // Prerequisites of prerequisites too: each one the model must call first is offered.
  const queue = [...wanted];
  for (let tool = queue.shift(); tool !== undefined; tool = queue.shift()) {
    for (const prerequisite of rules.prerequisites[tool] ?? []) {
      const name = prerequisiteTool(prerequisite);
      if (!wanted.has(name)) {
        wanted.add(name);
        queue.push(name);
      }
    }
  }
  if (rules.toolNames.includes(RESPOND_TOOL_NAME)) wanted.add(RESPOND_TOOL_NAME);
  return rules.toolNames.filter((name) => wanted.has(name));
}

/**
 * The tools of `offered` outside the step subset ({@link stepToolSubset}): what a request leaves
 * out after a premature terminal call, so it offers only the pending steps and their
 * prerequisites (docs/decisions/025). A small model that a step nudge alone did not turn is then
 * shown only the tools that can make progress; the loop still accepts a call to a left-out tool.
 * @example
 * toolsOutsideSteps(rules, { completedSteps: [], calls: [] }, ["lookup_order_status", "report_status"])
 * // ["report_status"]
 */
export function toolsOutsideSteps(
  rules: SubsetRules,
  progress: StepProgress,
  offered: readonly string[],
): string[] {
  const steps = stepToolSubset(rules, progress);
  return offered.filter((name) => !steps.includes(name));
}

/** What a user's `activeTools` function is given, once per LLM call. */
export interface ActiveToolsState {
  /** The LLM call about to be made (1-based). */
  iteration: number;
  /** Every tool of the workflow, in its order. */
  toolNames: readonly string[];
  /** The subset the runner derived (`toolSubsets: "steps"`), or every tool. */
  derived: readonly string[];
  completedSteps: readonly string[];
  pendingSteps: readonly string[];
  terminalTools: readonly string[];
}

/**
 * Chooses the tools of the next request. Return tool names of the workflow (at least one); a call
 * to any other tool is answered as an unknown tool.
 * @example
 * activeTools: (state) => (state.iteration > 4 ? state.toolNames : state.derived)
 */
export type ActiveTools = (state: ActiveToolsState) => readonly string[];

/**
 * The tool names the next request offers, or null when it offers every tool (no subset and no
 * `activeTools`). Throws `WorkflowDefinitionError` when `activeTools` returns no tool or a name
 * that is not one of the workflow's.
 */
export function chooseActiveTools(
  rules: SubsetRules & { toolSubsets?: ToolSubsets },
  progress: StepProgress,
  iteration: number,
  activeTools: ActiveTools | undefined,
): string[] | null {
  const steps = rules.toolSubsets === ToolSubsets.STEPS;
  if (!steps && activeTools === undefined) return null;
  const derived = steps ? stepToolSubset(rules, progress) : [...rules.toolNames];
  if (activeTools === undefined) return derived;
  const chosen = activeTools({
    iteration,
    toolNames: rules.toolNames,
    derived,
    completedSteps: progress.completedSteps,
    pendingSteps: pendingSteps(rules.requiredSteps, progress),
    terminalTools: rules.terminalTools,
  });
  return assertActiveTools(chosen, rules.toolNames);
}

function assertActiveTools(chosen: unknown, toolNames: readonly string[]): string[] {
  if (!Array.isArray(chosen) || chosen.length === 0) {
    throw new WorkflowDefinitionError(
      `activeTools must return a non-empty list of tool names, got ${JSON.stringify(chosen)}; return state.toolNames to offer every tool.`,
    );
  }
  const unknown = chosen.filter((name) => typeof name !== "string" || !toolNames.includes(name));
  if (unknown.length > 0) {
    throw new WorkflowDefinitionError(
      `activeTools returned ${unknown.map((name) => JSON.stringify(name)).join(", ")}, not tools of this workflow (its tools: ${toolNames.join(", ")}).`,
    );
  }
  return toolNames.filter((name) => chosen.includes(name));
}
