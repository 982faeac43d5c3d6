/**
 * What the harness adds to a run: the same scenario runs (reforged, sim-model faults) once
 * through `WorkflowRunner.run` directly and once through the harness (actor with recording,
 * subscriptions, metrics, persisted snapshot, row and trace written to JSONL), interleaved so
 * machine load hits both alike.
 *
 * Both paths run in this process, so besides wall time it reports CPU time (user + system), which
 * other processes on a shared machine disturb far less.
 *
 * Usage: tsx eval/bench/overhead.ts [--runs 5] [--transport http|in-process]
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { OpenAICompatibleClient } from "../../src/clients/openai/compatible-client.ts";
import { ContextManager } from "../../src/context/index.ts";
import type { LLMClient } from "../../src/core/types.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ABLATION_PRESETS } from "../ablation.ts";
import { openJsonlAppender } from "../batch/jsonl.ts";
import { currentVersions } from "../batch/row.ts";
import { createStrategy, runForge } from "../run/forge-run.ts";
import { ALL_SCENARIOS, type EvalScenario } from "../scenarios/index.ts";
import { InProcessSimClient } from "../sim-model/in-process-client.ts";
import { FAULT_PROFILES } from "../sim-model/profiles.ts";
import { startSimModel } from "../sim-model/server.ts";
import { simModelName } from "../sim-model/wire.ts";

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const index = args.indexOf(`--${name}`);
  return index >= 0 ? (args[index + 1] ?? fallback) : fallback;
};
const runs = Number(option("runs", "5"));
const transport = option("transport", "http");
const profileName = "mixed";
const config = ABLATION_PRESETS.reforged as NonNullable<(typeof ABLATION_PRESETS)["reforged"]>;
// Runs that start from a snapshot have no direct-runner equivalent: leave them out.
const scenarios = ALL_SCENARIOS.filter((scenario) => scenario.startAfterSteps === 0);

const sim = transport === "http" ? await startSimModel({ profile: profileName }) : null;
const clientFor = (scenario: EvalScenario, seed: number): LLMClient =>
  sim
    ? new OpenAICompatibleClient({
        baseUrl: sim.url,
        model: simModelName(profileName, scenario.id, seed),
        mode: "native",
        logger: () => {},
      })
    : new InProcessSimClient(
        scenario,
        FAULT_PROFILES[profileName] as NonNullable<(typeof FAULT_PROFILES)["mixed"]>,
        seed,
      );

interface Cost {
  wall: number;
  cpu: number;
}

async function measure(run: () => Promise<void>): Promise<Cost> {
  const wall = performance.now();
  const cpu = process.cpuUsage();
  await run();
  const used = process.cpuUsage(cpu);
  return { wall: performance.now() - wall, cpu: (used.user + used.system) / 1000 };
}

async function direct(scenario: EvalScenario, seed: number): Promise<void> {
  const { workflow } = scenario.build();
  const runner = new WorkflowRunner({
    client: clientFor(scenario, seed),
    contextManager: new ContextManager({
      strategy: createStrategy(config.compaction),
      budgetTokens: scenario.budgetTokens,
    }),
    maxIterations: scenario.maxIterations,
    maxRetriesPerStep: config.maxRetriesPerStep,
    maxToolErrors: config.maxToolErrors ?? 2,
    rescueEnabled: config.rescueEnabled,
    stepEnforcement: config.stepEnforcement,
  });
  try {
    await runner.run(workflow, scenario.userMessage, { runId: `${scenario.id}-${seed}` });
  } catch {
    // A failed run costs what it costs.
  }
}

const dir = mkdtempSync(join(tmpdir(), "forge-overhead-"));
const versions = currentVersions();
const rowsFile = openJsonlAppender(join(dir, "rows.jsonl"));
const tracesFile = openJsonlAppender(join(dir, "rows.traces.jsonl"));
async function harness(scenario: EvalScenario, seed: number): Promise<void> {
  const key = `${scenario.id}|${seed}`;
  const outcome = await runForge({
    key,
    scenario,
    config,
    client: clientFor(scenario, seed),
    runId: `${scenario.id}-${seed}`,
  });
  tracesFile.append(outcome.trace);
  rowsFile.append({ key, versions, ...outcome.measurement });
}

// Warm up both paths (JIT, module caches, connections).
for (const scenario of scenarios.slice(0, 5)) {
  await direct(scenario, 999);
  await harness(scenario, 999);
}
const totals = { direct: { wall: 0, cpu: 0 }, harness: { wall: 0, cpu: 0 } };
const ratios: number[] = [];
for (let seed = 0; seed < runs; seed += 1) {
  for (const scenario of scenarios) {
    const directFirst = (seed + scenario.id.length) % 2 === 0;
    const first = await measure(() => (directFirst ? direct(scenario, seed) : harness(scenario, seed)));
    const second = await measure(() => (directFirst ? harness(scenario, seed) : direct(scenario, seed)));
    const [directCost, harnessCost] = directFirst ? [first, second] : [second, first];
    for (const key of ["wall", "cpu"] as const) {
      totals.direct[key] += directCost[key];
      totals.harness[key] += harnessCost[key];
    }
    ratios.push(harnessCost.cpu / Math.max(directCost.cpu, 0.001));
  }
}
await sim?.close();
ratios.sort((a, b) => a - b);
const median = ratios[Math.floor(ratios.length / 2)] ?? 1;
const pairs = runs * scenarios.length;
const overhead = (key: "wall" | "cpu") =>
  (((totals.harness[key] - totals.direct[key]) / totals.direct[key]) * 100).toFixed(1);
console.log(
  [
    `transport ${transport}, ${pairs} paired runs (${scenarios.length} scenarios × ${runs} seeds, reforged, profile ${profileName})`,
    `direct WorkflowRunner.run:        wall ${(totals.direct.wall / pairs).toFixed(1)} ms/run, CPU ${(totals.direct.cpu / pairs).toFixed(1)} ms/run`,
    `harness (runForge + row + trace): wall ${(totals.harness.wall / pairs).toFixed(1)} ms/run, CPU ${(totals.harness.cpu / pairs).toFixed(1)} ms/run`,
    `overhead: CPU ${overhead("cpu")}%, wall ${overhead("wall")}%; median per-run CPU ratio ${median.toFixed(3)}`,
  ].join("\n"),
);
