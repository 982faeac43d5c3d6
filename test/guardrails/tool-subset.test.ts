/**
 * Per-step tool subsets as pure functions: what `stepToolSubset` offers at each step, and how a
 * user's `activeTools` is asked and checked.
 */
import { describe, expect, it } from "vitest";
import { WorkflowDefinitionError } from "../../src/core/errors.ts";
import { createStepProgress, recordStep } from "../../src/guardrails/step-state.ts";
import {
  chooseActiveTools,
  type SubsetRules,
  stepToolSubset,
  toolsOutsideSteps,
} from "../../src/guardrails/tool-subset.ts";

const rules: SubsetRules = {
  toolNames: ["search_flights", "get_flight_status", "get_gate_info", "book_hotel", "notify", "respond"],
  requiredSteps: ["get_flight_status", "get_gate_info"],
  terminalTools: ["notify"],
  prerequisites: { get_gate_info: ["get_flight_status"] },
};

const progressAfter = (...tools: string[]) =>
  tools.reduce((progress, tool) => recordStep(progress, tool), createStepProgress());

describe("stepToolSubset", () => {
  it("offers the pending required steps and their prerequisites, then the terminal tool; respond always", () => {
    expect(stepToolSubset(rules, progressAfter())).toEqual(["get_flight_status", "get_gate_info", "respond"]);
    // get_gate_info's prerequisite stays on offer (an arg-matched one may need another call).
    expect(stepToolSubset(rules, progressAfter("get_flight_status"))).toEqual([
      "get_flight_status",
      "get_gate_info",
      "respond",
    ]);
    expect(stepToolSubset(rules, progressAfter("get_flight_status", "get_gate_info"))).toEqual([
      "notify",
      "respond",
    ]);
  });

  it("follows prerequisites of prerequisites, arg-matched ones included, and the terminal tool's own", () => {
    const chain: SubsetRules = {
      toolNames: ["a", "b", "c", "d", "finish"],
      requiredSteps: ["c"],
      terminalTools: ["finish"],
      prerequisites: { c: [{ tool: "b", matchArg: "id" }], b: ["a"], finish: ["d"] },
    };
    expect(stepToolSubset(chain, progressAfter())).toEqual(["a", "b", "c"]);
    expect(stepToolSubset(chain, progressAfter("a", "b", "c"))).toEqual(["d", "finish"]);
  });

  it("without required steps offers only the terminal tools (and respond)", () => {
    expect(stepToolSubset({ ...rules, requiredSteps: [], prerequisites: {} }, progressAfter())).toEqual([
      "notify",
      "respond",
    ]);
  });
});

describe("chooseActiveTools", () => {
  it("is null (every tool) with no subset and no function", () => {
    expect(chooseActiveTools(rules, progressAfter(), 1, undefined)).toBeNull();
    expect(chooseActiveTools({ ...rules, toolSubsets: "all" }, progressAfter(), 1, undefined)).toBeNull();
  });

  it("gives the function the step state and the derived subset, and keeps the workflow's order", () => {
    const seen: unknown[] = [];
    const chosen = chooseActiveTools(
      { ...rules, toolSubsets: "steps" },
      progressAfter("get_flight_status"),
      3,
      (state) => {
        seen.push(state);
        return ["notify", ...state.derived];
      },
    );
    expect(chosen).toEqual(["get_flight_status", "get_gate_info", "notify", "respond"]);
    expect(seen).toEqual([
      {
        iteration: 3,
        toolNames: rules.toolNames,
        derived: ["get_flight_status", "get_gate_info", "respond"],
        completedSteps: ["get_flight_status"],
        pendingSteps: ["get_gate_info"],
        terminalTools: ["notify"],
      },
    ]);
  });

  it("derives every tool for the function when toolSubsets is off", () => {
    const chosen = chooseActiveTools(rules, progressAfter(), 1, (state) => state.derived.slice(0, 2));
    expect(chosen).toEqual(["search_flights", "get_flight_status"]);
  });

  it("rejects an empty list or a name that is not a tool, naming it and the tools", () => {
    expect(() => chooseActiveTools(rules, progressAfter(), 1, () => [])).toThrow(WorkflowDefinitionError);
    expect(() => chooseActiveTools(rules, progressAfter(), 1, () => ["notify", "get_weather"])).toThrow(
      /"get_weather", not tools of this workflow \(its tools: search_flights, get_flight_status/,
    );
  });
});

describe("toolsOutsideSteps", () => {
  it("leaves out what the step subset does not hold: the terminal tool and the optional ones", () => {
    expect(toolsOutsideSteps(rules, progressAfter(), rules.toolNames)).toEqual([
      "search_flights",
      "book_hotel",
      "notify",
    ]);
    expect(toolsOutsideSteps(rules, progressAfter("get_flight_status"), ["get_gate_info", "notify"])).toEqual(
      ["notify"],
    );
  });

  it("leaves out nothing of an offer that is already the step subset", () => {
    const offered = stepToolSubset(rules, progressAfter());
    expect(toolsOutsideSteps(rules, progressAfter(), offered)).toEqual([]);
  });
});
