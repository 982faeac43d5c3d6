/**
 * The loop-control eval configs (ADR 018) on the in-process sim-model: `reforged+subsets` offers
 * each request its step subset, `reforged+escalation` sends the call after two failures of one
 * kind to the same scenario under profile `clean` and counts it in the row and the trace.
 */
import { describe, expect, it } from "vitest";
import { LOOP_CONTROL_PRESETS, resolveConfigs } from "../../eval/ablation.ts";
import { BACKENDS } from "../../eval/backends/registry.ts";
import { executeTask } from "../../eval/batch/batch.ts";
import { selectScenarios } from "../../eval/scenarios/index.ts";

describe("loop-control eval configs", () => {
  it("are named on their own, not part of all", () => {
    expect(resolveConfigs(["all"]).map((config) => config.name)).not.toContain("reforged+subsets");
    expect(resolveConfigs(["reforged+subsets", "reforged+escalation"])).toEqual([
      LOOP_CONTROL_PRESETS["reforged+subsets"],
      LOOP_CONTROL_PRESETS["reforged+escalation"],
    ]);
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
      let escalated = null;
      for (let seed = 0; seed < 40 && escalated === null; seed += 1) {
        const outcome = await executeTask(
          { key: `k${seed}`, scenario, config, seed } as never,
          session,
          false,
        );
        if ((outcome.measurement.escalations ?? 0) > 0) escalated = outcome;
      }
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
