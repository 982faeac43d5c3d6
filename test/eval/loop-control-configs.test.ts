/**
 * The loop-control eval configs (ADR 018) on the in-process sim-model: `reforged+subsets` offers
 * each request its step subset, `reforged+escalation` sends the call after two failures of one
 * kind to the same scenario under profile `clean` and counts it in the row and the trace.
 */
import { describe, expect, it } from "vitest";
import { LOOP_CONTROL_PRESETS, resolveConfigs } from "../../eval/ablation.ts";
import { BACKENDS } from "../../eval/backends/registry.ts";
import { executeTask } from "../../eval/batch/batch.ts";
import { configSchema } from "../../eval/batch/row.ts";
import { selectScenarios } from "../../eval/scenarios/index.ts";

type Task = Parameters<typeof executeTask>[0];
type Outcome = Awaited<ReturnType<typeof executeTask>>;

/** The first of seeds 0–39 whose run of `config` satisfies `wanted`, or null. */
async function firstSeedWhere(
  session: Parameters<typeof executeTask>[1],
  scenario: Task["scenario"],
  config: Task["config"],
  wanted: (outcome: Outcome) => boolean,
): Promise<Outcome | null> {
  for (let seed = 0; seed < 40; seed += 1) {
    const outcome = await executeTask(
      { key: `${config.name}${seed}`, scenario, config, seed } as never,
      session,
      false,
    );
    if (wanted(outcome)) return outcome;
  }
  return null;
}

describe("loop-control eval configs", () => {
  it("are named on their own, not part of all", () => {
    expect(resolveConfigs(["all"]).map((config) => config.name)).not.toContain("reforged+subsets");
    expect(resolveConfigs(["all"]).map((config) => config.name)).not.toContain("no_force");
    expect(resolveConfigs(["reforged+subsets", "reforged+escalation"])).toEqual([
      LOOP_CONTROL_PRESETS["reforged+subsets"],
      LOOP_CONTROL_PRESETS["reforged+escalation"],
    ]);
  });

  it("no_force sends its retries after a prose answer without toolChoice required, reforged forces them", async () => {
    const [scenario] = selectScenarios(["basic_forecast_prose"]);
    if (!scenario) throw new Error("no basic_forecast_prose scenario");
    // Under hostile faults (60% of turns) some seeds answer in prose, so the loop retries.
    const session = await BACKENDS["sim-model"]?.start({ profile: "hostile", scenarios: [scenario] });
    if (!session) throw new Error("no sim-model backend");
    try {
      const noForce = LOOP_CONTROL_PRESETS.no_force;
      const reforged = resolveConfigs(["reforged"])[0];
      if (!noForce || !reforged) throw new Error("missing configs");
      expect(noForce).toEqual({ ...reforged, name: "no_force", forceToolChoiceOnRetry: false });
      expect(configSchema.parse(noForce)).toEqual(noForce);
      const retried = async (config: typeof noForce) => {
        const outcome = await firstSeedWhere(
          session,
          scenario,
          config,
          (run) => run.measurement.nudges.retry > 0,
        );
        if (!outcome) throw new Error(`no seed of ${config.name} retried`);
        return outcome;
      };
      const free = await retried(noForce);
      expect(free.measurement.forcedRetries).toBe(0);
      expect(free.trace.exchanges.some((exchange) => exchange.toolChoice === "required")).toBe(false);
      const forced = await retried(reforged);
      expect(forced.measurement.forcedRetries).toBeGreaterThan(0);
      expect(forced.trace.exchanges.filter((exchange) => exchange.toolChoice === "required")).toHaveLength(
        forced.measurement.forcedRetries,
      );
    } finally {
      await session.close();
    }
  });

  it("escalate to the clean profile after two failures of one kind, counted in the row and the trace", async () => {
    const [scenario] = selectScenarios(["tool_selection"]);
    if (!scenario) throw new Error("no tool_selection scenario");
    // Under hostile faults (60% of turns) some seed fails twice in a row the same way.
    const session = await BACKENDS["sim-model"]?.start({ profile: "hostile", scenarios: [scenario] });
    if (!session) throw new Error("no sim-model backend");
    try {
      const config = LOOP_CONTROL_PRESETS["reforged+escalation"];
      if (!config) throw new Error("no reforged+escalation config");
      const escalated = await firstSeedWhere(
        session,
        scenario,
        config,
        (run) => (run.measurement.escalations ?? 0) > 0,
      );
      expect(escalated).not.toBeNull();
      const { measurement, trace } = escalated as NonNullable<typeof escalated>;
      const labelled = trace.exchanges.filter((exchange) => exchange.client === "sim/clean");
      expect(labelled).toHaveLength(measurement.escalatedCalls ?? -1);
      const context = (trace.finalSnapshot as { context: { escalation: { servedBy: string[] } } }).context;
      expect(context.escalation.servedBy.filter((name) => name === "sim/clean")).toHaveLength(
        labelled.length,
      );
      expect(context.escalation.servedBy).toHaveLength(measurement.iterations);
    } finally {
      await session.close();
    }
  });
});
