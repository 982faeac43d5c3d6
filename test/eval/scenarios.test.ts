import { describe, expect, it } from "vitest";
import { BASIC_SCENARIOS, BasicTrap } from "../../eval/scenarios/basic.ts";
import { CHAIN_BUDGETS } from "../../eval/scenarios/compaction.ts";
import {
  ALL_SCENARIOS,
  allTags,
  ScenarioCategory,
  selectScenarios,
  UnknownSelectionError,
} from "../../eval/scenarios/index.ts";
import { FaultKind } from "../../eval/sim-model/profiles.ts";
import { runInProcess, scenario, scripted } from "./helpers.ts";

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
    // The budgets are defined for compaction just under the threshold (no hysteresis); with the
    // default target (0.5) each variant compacts at least as deep, and no more often.
    for (const [id, phase] of Object.entries(expected)) {
      const { measurement } = await runInProcess(id, "reforged", undefined, 0, 0.75);
      expect(measurement.maxPhase, id).toBe(phase);
      const { measurement: withHysteresis } = await runInProcess(id, "reforged");
      expect(withHysteresis.maxPhase, id).toBeGreaterThanOrEqual(phase);
      expect(withHysteresis.compactions, id).toBeLessThanOrEqual(measurement.compactions);
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

describe("the basic tier", () => {
  it("is frozen: these 15 scenarios, in this order, selected by --tags basic", () => {
    expect(BASIC_SCENARIOS.map((entry) => entry.id)).toEqual([
      "basic_forecast_prose",
      "basic_stock_prose",
      "basic_fine_prose",
      "basic_tide_prose",
      "basic_refund_premature",
      "basic_table_premature",
      "basic_welcome_premature",
      "basic_gate_premature",
      "basic_court_premature",
      "basic_rate_unknown_tool",
      "basic_clock_unknown_tool",
      "basic_consignment_unknown_tool",
      "basic_points_transient",
      "basic_shelf_transient",
      "basic_vaccine_transient",
    ]);
    expect(selectScenarios([], ["basic"])).toEqual(BASIC_SCENARIOS);
  });

  it("keeps every scenario small: 2–3 calls, 2–4 tools of 0–3 parameters, one trap", () => {
    const traps = Object.values(BasicTrap) as string[];
    for (const entry of BASIC_SCENARIOS) {
      const { workflow } = entry.build();
      const tools = Object.values(workflow.tools);
      expect(entry.reference.length, entry.id).toBeGreaterThanOrEqual(2);
      expect(entry.reference.length, entry.id).toBeLessThanOrEqual(3);
      expect(tools.length, entry.id).toBeGreaterThanOrEqual(2);
      expect(tools.length, entry.id).toBeLessThanOrEqual(4);
      for (const tool of tools) {
        expect(Object.keys(tool.spec.parameters.shape).length, tool.spec.name).toBeLessThanOrEqual(3);
      }
      expect(
        entry.tags.filter((tag) => traps.includes(tag)),
        entry.id,
      ).toHaveLength(1);
      expect(workflow.systemPrompt, entry.id).toMatch(/^You are an? [a-z ]+\. First call /);
    }
  });

  it("rejects a terminal call that lacks the looked-up value", () => {
    for (const entry of BASIC_SCENARIOS) {
      const terminal = entry.reference.at(-1);
      if (!terminal) throw new Error(entry.id);
      const emptied = Object.fromEntries(Object.keys(terminal.args).map((key) => [key, "unknown"]));
      expect(entry.checkAnswer({ tool: terminal.tool, args: emptied }), entry.id).not.toBeNull();
      expect(entry.checkAnswer({ tool: terminal.tool, args: terminal.args }), entry.id).toBeNull();
    }
  });

  const faultOf: Record<string, FaultKind | null> = {
    [BasicTrap.PROSE]: FaultKind.PROSE,
    [BasicTrap.PREMATURE_TERMINAL]: FaultKind.PREMATURE_TERMINAL,
    [BasicTrap.UNKNOWN_TOOL]: FaultKind.HALLUCINATED_TOOL,
    // The tool itself fails: the model needs no fault to fall into this trap.
    [BasicTrap.TRANSIENT_ERROR]: null,
  };
  it.each(BASIC_SCENARIOS.map((entry) => entry.id))(
    "%s: a model that falls into the trap recovers under reforged and fails under bare",
    async (id) => {
      const trap = scenario(id).tags.find((tag) => tag in faultOf) as string;
      const profile = scripted(faultOf[trap] ?? null);
      const { measurement: guarded } = await runInProcess(id, "reforged", profile);
      expect(guarded.accurate, guarded.errorMessage ?? guarded.answerProblem ?? "").toBe(true);
      const { measurement: bare } = await runInProcess(id, "bare", profile);
      expect(bare.accurate).toBe(false);
    },
  );
});
