import { describe, expect, it } from "vitest";
import { CHAIN_BUDGETS } from "../../eval/scenarios/compaction.ts";
import {
  ALL_SCENARIOS,
  allTags,
  ScenarioCategory,
  selectScenarios,
  UnknownSelectionError,
} from "../../eval/scenarios/index.ts";
import { runInProcess, scenario } from "./helpers.ts";

describe("the scenario set", () => {
  it("has at least 30 uniquely named scenarios covering every category, with stateful variants", () => {
    expect(ALL_SCENARIOS.length).toBeGreaterThanOrEqual(30);
    expect(new Set(ALL_SCENARIOS.map((entry) => entry.id)).size).toBe(ALL_SCENARIOS.length);
    for (const category of Object.values(ScenarioCategory)) {
      expect(ALL_SCENARIOS.filter((entry) => entry.category === category).length).toBeGreaterThanOrEqual(3);
    }
    expect(ALL_SCENARIOS.filter((entry) => entry.stateful).length).toBeGreaterThanOrEqual(10);
    expect(allTags()).toEqual(
      expect.arrayContaining(["plumbing", "model_quality", "reasoning", "compaction", "stateful"]),
    );
  });

  it("gives every scenario a budget, an ideal count, a reference whose tools exist, and a validator", () => {
    for (const entry of ALL_SCENARIOS) {
      const { workflow } = entry.build();
      expect(entry.idealIterations, entry.id).toBeGreaterThan(0);
      expect(entry.maxIterations, entry.id).toBeGreaterThanOrEqual(entry.idealIterations);
      for (const step of entry.reference) expect(Object.keys(workflow.tools), entry.id).toContain(step.tool);
      expect(workflow.terminalTools, entry.id).toContain(entry.reference.at(-1)?.tool);
    }
  });

  it.each(ALL_SCENARIOS.map((entry) => entry.id))(
    "%s: the reference solution passes in the ideal number of calls",
    async (id) => {
      const { measurement, trace } = await runInProcess(id, "reforged");
      expect(measurement.status, measurement.errorMessage ?? "").toBe("done");
      expect(measurement.answerProblem).toBeNull();
      expect(measurement.stateProblem).toBeNull();
      expect(measurement.accurate).toBe(true);
      expect(measurement.iterations).toBe(scenario(id).idealIterations);
      expect(trace.finalSnapshot).toMatchObject({ status: "done" });
    },
  );

  it("the chain variants reach exactly the compaction phase their budget is meant to force", async () => {
    const expected = {
      compaction_chain_baseline: 0,
      compaction_chain_p1: 1,
      compaction_chain_p2: 2,
      compaction_chain_p3: 3,
    };
    for (const [id, phase] of Object.entries(expected)) {
      const { measurement } = await runInProcess(id, "reforged");
      expect(measurement.maxPhase, id).toBe(phase);
    }
    expect(CHAIN_BUDGETS.p3).toBeLessThan(CHAIN_BUDGETS.p2);
  });

  it("without compaction the tight chain overflows the sim-model's context window; with it, it does not", async () => {
    const tight = scenario("compaction_chain_p2");
    const { measurement: compacted } = await runInProcess(tight.id, "reforged");
    expect(compacted.peakContextTokens).toBeLessThanOrEqual(tight.budgetTokens);
    const { measurement: raw } = await runInProcess(tight.id, "no_compact");
    expect(raw.peakContextTokens).toBeGreaterThan(tight.budgetTokens);
  });

  it("the resume variant starts from a persisted snapshot taken after 6 steps and needs only the rest", async () => {
    const { measurement, trace } = await runInProcess("compaction_chain_resume", "reforged");
    expect(measurement.startedFromSnapshot).toBe(true);
    expect(trace.initialSnapshot).toMatchObject({
      status: "active",
      value: "infer",
      context: { iteration: 7 },
    });
    expect(trace.startMessages.filter((message) => message.metadata.type === "tool_call")).toHaveLength(6);
    expect(measurement.iterations).toBe(4);
    expect(measurement.compactions).toBeGreaterThan(0);
  });

  it("stateful tools start fresh per run, and a duplicated call breaks the state check", async () => {
    const entry = scenario("basic_2step_stateful");
    const first = entry.build();
    const second = entry.build();
    await first.workflow.tools.create_note?.execute({ title: "Standup", body: "x" });
    await first.workflow.tools.create_note?.execute({ title: "Standup", body: "x" });
    expect(first.checkState?.()).toMatch(/expected 1 note, found 2/);
    expect(second.checkState?.()).toMatch(/expected 1 note, found 0/);
  });

  it("selects by id and tag, and names the valid ones for unknown input", () => {
    expect(selectScenarios(["basic_2step"]).map((entry) => entry.id)).toEqual(["basic_2step"]);
    expect(selectScenarios([], ["compaction"]).every((entry) => entry.tags.includes("compaction"))).toBe(
      true,
    );
    expect(() => selectScenarios(["nope"])).toThrow(UnknownSelectionError);
    expect(() => selectScenarios(["nope"])).toThrow(/Valid scenarios: basic_2step, /);
    expect(() => selectScenarios([], ["nope"])).toThrow(/Valid tags: .*plumbing/);
  });
});
