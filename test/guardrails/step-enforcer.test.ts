/**
 * StepEnforcer: premature terminal calls with escalating nudges, prerequisites (name-only and
 * arg-matched, against the state before the batch), their budgets and resets.
 */
import { describe, expect, it } from "vitest";
import type { ToolCall } from "../../src/core/types.ts";
import { StepEnforcer } from "../../src/guardrails/step-enforcer.ts";

const call = (tool: string, args: Record<string, unknown> = {}): ToolCall => ({ tool, args });

function enforcer(options: Partial<ConstructorParameters<typeof StepEnforcer>[0]> = {}) {
  return new StepEnforcer({ requiredSteps: ["search", "lookup"], terminalTools: ["answer"], ...options });
}

describe("StepEnforcer: premature terminal calls", () => {
  it("lets a batch without a terminal call through", () => {
    expect(enforcer().check([call("search")])).toEqual({ nudge: null, needsNudge: false });
  });

  it("escalates over three tiers with the API.md texts, then exhausts on the 4th (default 3)", () => {
    const steps = enforcer();
    const nudges = [1, 2, 3].map(() => steps.check([call("answer")]));
    expect(nudges.map((check) => check.nudge?.tier)).toEqual([1, 2, 3]);
    for (const check of nudges) {
      expect(check.needsNudge).toBe(true);
      expect(check.nudge).toMatchObject({ role: "tool", kind: "step" });
      expect(check.nudge?.content).toMatch(/^\[StepEnforcementError\] /);
      expect(check.nudge?.content).toContain("search, lookup");
    }
    expect(nudges[0]?.nudge?.content).toContain("cannot call answer yet");
    expect(nudges[1]?.nudge?.content).toContain("must call one of these tools now");
    expect(nudges[2]?.nudge?.content).toContain("STOP");
    expect(nudges[2]?.nudge?.content).toContain("Your next call must be search.");
    expect(steps.prematureAttempts).toBe(3);
    expect(steps.prematureExhausted).toBe(false);

    const fourth = steps.check([call("answer")]);
    expect(fourth.needsNudge).toBe(true);
    expect(fourth.nudge?.tier).toBe(3);
    expect(steps.prematureAttempts).toBe(4);
    expect(steps.prematureExhausted).toBe(true);
  });

  it("honours maxPrematureAttempts", () => {
    const steps = enforcer({ maxPrematureAttempts: 1 });
    steps.check([call("answer")]);
    expect(steps.prematureExhausted).toBe(false);
    steps.check([call("answer")]);
    expect(steps.prematureExhausted).toBe(true);
  });

  it("answers each call of the batch, one line per call: the others [NotRun]", () => {
    const check = enforcer().check([call("search"), call("answer")]);
    const lines = (check.nudge?.content ?? "").split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toBe(
      "[StepEnforcementError] [NotRun] 'search' was not run because this batch was rejected: answer was called before the required steps. Call it again if you still need it.",
    );
    expect(lines[1]).toMatch(/^\[StepEnforcementError\] You cannot call answer yet/);
  });

  it("names only the pending steps, and lets the terminal through once all are recorded", () => {
    const steps = enforcer();
    steps.record("search");
    expect(steps.check([call("answer")]).nudge?.content).toContain("not done: lookup.");
    steps.record("lookup", { id: 1 });
    expect(steps.check([call("answer")])).toEqual({ nudge: null, needsNudge: false });
  });

  it("resetPremature starts the escalation over", () => {
    const steps = enforcer();
    steps.check([call("answer")]);
    steps.check([call("answer")]);
    steps.resetPremature();
    expect(steps.prematureAttempts).toBe(0);
    expect(steps.check([call("answer")]).nudge?.tier).toBe(1);
  });

  it("treats any of several terminal tools as terminal", () => {
    const steps = enforcer({ terminalTools: ["answer", "give_up"] });
    expect(steps.check([call("give_up")]).nudge?.content).toContain("cannot call give_up yet");
  });
});

describe("StepEnforcer: progress", () => {
  it("records steps in first-completion order, reports pending steps and the summary hint", () => {
    const steps = enforcer();
    expect(steps.isSatisfied()).toBe(false);
    expect(steps.pending()).toEqual(["search", "lookup"]);
    expect(steps.summaryHint()).toBe("[No steps completed yet]");
    steps.record("lookup", { id: 2 });
    steps.record("extra");
    steps.record("lookup", { id: 3 });
    expect(steps.completedSteps).toEqual(["lookup", "extra"]);
    expect(steps.pending()).toEqual(["search"]);
    steps.record("search");
    expect(steps.isSatisfied()).toBe(true);
    expect(steps.pending()).toEqual([]);
    expect(steps.summaryHint()).toBe("[Steps completed: lookup, extra, search]");
  });

  it("hands out a copy of completedSteps", () => {
    const steps = enforcer();
    steps.record("search");
    steps.completedSteps.push("lookup");
    expect(steps.completedSteps).toEqual(["search"]);
  });

  it("is satisfied from the start with no required steps", () => {
    const steps = enforcer({ requiredSteps: [] });
    expect(steps.isSatisfied()).toBe(true);
    expect(steps.check([call("answer")]).needsNudge).toBe(false);
  });
});

describe("StepEnforcer: prerequisites", () => {
  const toolPrerequisites = {
    lookup: ["search"],
    read: [{ tool: "lookup", matchArg: "id" }],
  };

  it("blocks a call whose name-only prerequisite was not called, with a [PrereqError] reply", () => {
    const steps = enforcer({ toolPrerequisites });
    const check = steps.checkPrerequisites([call("lookup", { id: 1 })]);
    expect(check.needsNudge).toBe(true);
    expect(check.nudge).toEqual({
      role: "tool",
      content: "[PrereqError] You cannot call lookup yet: call search first. lookup depends on its result.",
      kind: "prerequisite",
      tier: 1,
    });
    steps.record("search");
    expect(steps.checkPrerequisites([call("lookup", { id: 1 })])).toEqual({ nudge: null, needsNudge: false });
  });

  it("matches an arg-matched prerequisite on the argument's value", () => {
    const steps = enforcer({ toolPrerequisites });
    steps.record("lookup", { id: 7 });
    expect(steps.checkPrerequisites([call("read", { id: 7 })]).needsNudge).toBe(false);
    const check = steps.checkPrerequisites([call("read", { id: 8 })]);
    expect(check.nudge?.content).toBe(
      "[PrereqError] You cannot call read yet: call lookup (with id=8) first. read depends on its result.",
    );
  });

  it("checks against the state before the batch: a prerequisite in the same batch does not count", () => {
    const steps = enforcer({ toolPrerequisites });
    const check = steps.checkPrerequisites([call("search"), call("lookup", { id: 1 })]);
    expect(check.needsNudge).toBe(true);
    const lines = (check.nudge?.content ?? "").split("\n");
    expect(lines).toEqual([
      "[PrereqError] [NotRun] 'search' was not run because this batch was rejected: lookup lacked prerequisites. Call it again if you still need it.",
      "[PrereqError] You cannot call lookup yet: call search first. lookup depends on its result.",
    ]);
  });

  it("exhausts on the 3rd violation in a row with the default 2; the tier is the count", () => {
    const steps = enforcer({ toolPrerequisites });
    const tiers = [1, 2, 3].map(() => {
      const check = steps.checkPrerequisites([call("lookup")]);
      return [check.nudge?.tier, steps.prereqExhausted];
    });
    expect(tiers).toEqual([
      [1, false],
      [2, false],
      [3, true],
    ]);
    expect(steps.prereqViolations).toBe(3);
  });

  it("resetPrereqViolations ends the streak", () => {
    const steps = enforcer({ toolPrerequisites, maxPrereqViolations: 0 });
    steps.checkPrerequisites([call("lookup")]);
    expect(steps.prereqExhausted).toBe(true);
    steps.resetPrereqViolations();
    expect(steps.prereqViolations).toBe(0);
    expect(steps.prereqExhausted).toBe(false);
  });

  it("keeps the premature and prerequisite counts apart", () => {
    const steps = enforcer({ toolPrerequisites });
    steps.check([call("answer")]);
    steps.checkPrerequisites([call("lookup")]);
    steps.resetPremature();
    expect([steps.prematureAttempts, steps.prereqViolations]).toEqual([0, 1]);
  });
});

describe("StepEnforcer: options", () => {
  it("defaults to 3 premature attempts and 2 prerequisite violations", () => {
    const steps = enforcer();
    expect([steps.maxPrematureAttempts, steps.maxPrereqViolations]).toEqual([3, 2]);
  });

  it.each([
    [{ maxPrematureAttempts: -1 }, "maxPrematureAttempts must be a non-negative integer, got -1"],
    [{ maxPrereqViolations: 0.5 }, "maxPrereqViolations must be a non-negative integer, got 0.5"],
  ])("rejects %o with a RangeError naming the option", (options, message) => {
    expect(() => enforcer(options)).toThrow(new RangeError(message));
  });
});
