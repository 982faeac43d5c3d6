import { ABLATION_PRESETS, type LoopConfig } from "../../eval/ablation.ts";
import type { RunRow } from "../../eval/batch/row.ts";
import { runForge } from "../../eval/run/forge-run.ts";
import { scenarioById } from "../../eval/scenarios/index.ts";
import type { EvalScenario } from "../../eval/scenarios/scenario.ts";
import { InProcessSimClient } from "../../eval/sim-model/in-process-client.ts";
import { FAULT_PROFILES, type FaultKind, type FaultProfile } from "../../eval/sim-model/profiles.ts";

/** A scenario that must exist. */
export function scenario(id: string): EvalScenario {
  const found = scenarioById(id);
  if (!found) throw new Error(`no scenario ${id}`);
  return found;
}

/** A preset that must exist. */
export function preset(name: string): LoopConfig {
  const found = ABLATION_PRESETS[name];
  if (!found) throw new Error(`no preset ${name}`);
  return found;
}

/** A profile that injects exactly these faults at these turns and nothing else. */
export function scripted(...faults: (FaultKind | null)[]): FaultProfile {
  return { name: "scripted", description: "test", rates: {}, script: faults };
}

/** Run a scenario in-process against the sim planner. */
export async function runInProcess(
  id: string,
  config: string,
  profile: FaultProfile = FAULT_PROFILES.clean!,
  seed = 0,
  compactTarget?: number,
) {
  const client = new InProcessSimClient(scenario(id), profile, seed);
  const outcome = await runForge({
    key: `${id}|${config}`,
    scenario: scenario(id),
    config: preset(config),
    client,
    runId: `${id}-${seed}`,
    ...(compactTarget !== undefined && { compactTarget }),
  });
  return { ...outcome, client };
}

/** A row with plausible defaults. */
export function fakeRow(
  config: string,
  scenario: string,
  runIndex: number,
  accurate: boolean,
  extra: Partial<RunRow> = {},
): RunRow {
  return {
    schema: 1,
    key: `sim|m|${config}|${scenario}|run${runIndex}|seed0`,
    batchId: "b",
    timestamp: "t",
    backend: "sim-model",
    model: "sim/mixed",
    simulated: true,
    profile: "mixed",
    baseSeed: 0,
    seed: runIndex,
    runIndex,
    configLabel: config,
    config: {
      name: config,
      loop: "forge",
      rescueEnabled: true,
      maxRetriesPerStep: 3,
      stepEnforcement: true,
      maxToolErrors: 2,
      compaction: "tiered",
    },
    stream: false,
    scenario,
    category: "plumbing",
    tags: ["plumbing"],
    stateful: false,
    versions: { forgeGuardrails: "0.1.0", node: "v20", xstate: "5", ai: "6", commit: null },
    status: accurate ? "done" : "failed",
    completed: accurate,
    accurate,
    answerProblem: null,
    stateProblem: null,
    failureKind: accurate ? null : "retries_exhausted",
    errorName: null,
    errorMessage: null,
    terminal: null,
    iterations: 2,
    idealIterations: 2,
    wastedCalls: 0,
    efficiency: accurate ? 1 : null,
    toolCalls: 2,
    toolErrors: 0,
    textResponses: 0,
    rescues: 0,
    nudges: { retry: 0, unknown_tool: 0, step: 0, prerequisite: 0 },
    compactions: 0,
    maxPhase: 0,
    inputTokens: 100,
    outputTokens: 10,
    peakContextTokens: 60,
    wallMs: 5,
    startedFromSnapshot: false,
    trace: null,
    ...extra,
  };
}
