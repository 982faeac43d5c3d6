import { ABLATION_PRESETS, type LoopConfig } from "../../eval/ablation.ts";
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
) {
  const client = new InProcessSimClient(scenario(id), profile, seed);
  const outcome = await runForge({
    key: `${id}|${config}`,
    scenario: scenario(id),
    config: preset(config),
    client,
    runId: `${id}-${seed}`,
  });
  return { ...outcome, client };
}
