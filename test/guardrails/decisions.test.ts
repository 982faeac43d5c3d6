/**
 * The decision core (guardrails/decisions.ts): each function's branches, and the counters each
 * decision leaves behind.
 */
import { describe, expect, it } from "vitest";
import type { ToolCall } from "../../src/core/types.ts";
import {
  batchFailed,
  type CallOutcome,
  countersAfter,
  countersAfterBatch,
  createGuardCounters,
  type Decision,
  decideBatch,
  decideEnforcement,
  decidePremature,
  decidePrerequisites,
  decideResponse,
  type GuardCounters,
  type GuardRules,
  type GuardState,
  isBudgetExceeded,
  MAX_STEP_TIER,
  malformedCalls,
} from "../../src/guardrails/decisions.ts";
import { DEFAULT_LIMITS } from "../../src/guardrails/limits.ts";
import { createStepProgress, recordStep, type StepProgress } from "../../src/guardrails/step-state.ts";

const call = (tool: string, args: Record<string, unknown> = {}): ToolCall => ({ tool, args });
const broken = (tool: string, reason = "invalid JSON"): ToolCall => ({
  tool,
  args: {},
  argumentsError: reason,
});

const rules: GuardRules = {
  toolNames: ["search", "fetch", "answer"],
  requiredSteps: ["search", "fetch"],
  terminalTools: ["answer"],
  prerequisites: { fetch: ["search"], answer: [{ tool: "fetch", matchArg: "id" }] },
  rescueEnabled: true,
  stepEnforcement: true,
  maxRetriesPerStep: 3,
  maxToolErrors: 2,
  maxPrematureAttempts: 3,
  maxPrereqViolations: 2,
};

function stateWith(overrides: Partial<GuardState> = {}): GuardState {
  return { ...createGuardCounters(), progress: createStepProgress(), ...overrides };
}

function progressOf(...calls: [string, Record<string, unknown>?][]): StepProgress {
  return calls.reduce(
    (progress, [tool, args]) => recordStep(progress, tool, args ?? {}),
    createStepProgress(),
  );
}

describe("isBudgetExceeded", () => {
  it("tolerates max failures and is exceeded by the next one", () => {
    expect(isBudgetExceeded(3, 3)).toBe(false);
    expect(isBudgetExceeded(4, 3)).toBe(true);
    expect(isBudgetExceeded(1, 0)).toBe(true);
    expect(isBudgetExceeded(0, 0)).toBe(false);
  });
});

describe("malformedCalls", () => {
  it("lists the calls with an argumentsError, with their position and reason", () => {
    expect(
      malformedCalls([call("search"), broken("fetch", "an array"), broken("answer", "a string")]),
    ).toEqual([
      { index: 1, tool: "fetch", reason: "an array" },
      { index: 2, tool: "answer", reason: "a string" },
    ]);
    expect(malformedCalls([call("search")])).toEqual([]);
  });
});

describe("decideResponse", () => {
  const counters = createGuardCounters();

  it("accepts known calls with decodable arguments", () => {
    const calls = [call("search", { q: "x" })];
    expect(decideResponse(calls, rules, counters)).toEqual({ kind: "accept", calls, rescued: false });
  });

  it("accepts a call rescued from text, and says it was rescued", () => {
    const decision = decideResponse({ content: '{"tool": "search", "args": {"q": "x"}}' }, rules, counters);
    expect(decision).toEqual({ kind: "accept", calls: [call("search", { q: "x" })], rescued: true });
  });

  it("retries rescuable text when rescue is off", () => {
    const raw = '{"tool": "search", "args": {"q": "x"}}';
    const decision = decideResponse({ content: raw }, { ...rules, rescueEnabled: false }, counters);
    expect(decision).toEqual({ kind: "retry", raw, attempt: 1 });
  });

  it("retries prose, counting the attempt from the retry streak", () => {
    const decision = decideResponse({ content: "Let me think." }, rules, {
      ...counters,
      consecutiveRetries: 2,
    });
    expect(decision).toEqual({ kind: "retry", raw: "Let me think.", attempt: 3 });
  });

  it("retries an empty call list as empty text", () => {
    expect(decideResponse([], rules, counters)).toEqual({ kind: "retry", raw: "", attempt: 1 });
  });

  it("rejects a batch with unknown tools, naming each unknown tool once", () => {
    const calls = [call("nope"), call("search"), call("nope"), call("other")];
    const decision = decideResponse(calls, rules, counters);
    expect(decision).toMatchObject({ kind: "unknown_tools", calls, unknown: ["nope", "other"], attempt: 1 });
    expect(decision.kind === "unknown_tools" && JSON.parse(decision.raw)).toEqual(calls);
  });

  it("checks unknown tools before malformed arguments", () => {
    const decision = decideResponse([broken("search"), call("nope")], rules, counters);
    expect(decision.kind).toBe("unknown_tools");
  });

  it("rejects malformed arguments, counting the attempt from the tool-error streak", () => {
    const calls = [call("search"), broken("fetch", "not an object")];
    const decision = decideResponse(calls, rules, { consecutiveRetries: 3, consecutiveToolErrors: 1 });
    expect(decision).toEqual({
      kind: "malformed_args",
      calls,
      malformed: [{ index: 1, tool: "fetch", reason: "not an object" }],
      attempt: 2,
    });
  });

  it("exhausts the tool-error budget with malformed arguments past maxToolErrors", () => {
    const decision = decideResponse([broken("fetch")], rules, {
      consecutiveRetries: 0,
      consecutiveToolErrors: 2,
    });
    expect(decision).toMatchObject({ kind: "malformed_args_exhausted", attempts: 3 });
  });

  it("exhausts the retry budget with text past maxRetriesPerStep (wasText true)", () => {
    const decision = decideResponse({ content: "prose" }, rules, {
      consecutiveRetries: 3,
      consecutiveToolErrors: 0,
    });
    expect(decision).toEqual({ kind: "retries_exhausted", raw: "prose", attempts: 4, wasText: true });
  });

  it("exhausts the retry budget with unknown tools too (wasText false)", () => {
    const decision = decideResponse([call("nope")], rules, {
      consecutiveRetries: 3,
      consecutiveToolErrors: 0,
    });
    expect(decision).toMatchObject({ kind: "retries_exhausted", attempts: 4, wasText: false });
  });

  it("with a budget of 0, the first failure exhausts it", () => {
    const zero = { ...rules, maxRetriesPerStep: 0, maxToolErrors: 0 };
    expect(decideResponse({ content: "x" }, zero, counters).kind).toBe("retries_exhausted");
    expect(decideResponse([broken("search")], zero, counters).kind).toBe("malformed_args_exhausted");
  });
});

describe("decidePremature", () => {
  const calls = [call("search"), call("answer", { id: 1 })];

  it("is null without a terminal call, or once every required step is done", () => {
    expect(decidePremature([call("search")], rules, stateWith())).toBeNull();
    expect(
      decidePremature(calls, rules, stateWith({ progress: progressOf(["search"], ["fetch"]) })),
    ).toBeNull();
  });

  it("escalates the tier with the attempt, capped at MAX_STEP_TIER", () => {
    const tiers = [0, 1, 2].map((prematureAttempts) =>
      decidePremature(calls, rules, stateWith({ prematureAttempts })),
    );
    expect(tiers).toEqual(
      [1, 2, 3].map((tier) => ({
        kind: "premature",
        calls,
        terminalTool: "answer",
        pending: ["search", "fetch"],
        tier,
        attempt: tier,
      })),
    );
    const beyond = decidePremature(
      calls,
      { ...rules, maxPrematureAttempts: 10 },
      stateWith({ prematureAttempts: 6 }),
    );
    expect(beyond).toMatchObject({ kind: "premature", tier: MAX_STEP_TIER, attempt: 7 });
  });

  it("lists only the steps still pending", () => {
    const decision = decidePremature(calls, rules, stateWith({ progress: progressOf(["search"]) }));
    expect(decision?.pending).toEqual(["fetch"]);
  });

  it("exhausts on the attempt past maxPrematureAttempts", () => {
    expect(decidePremature(calls, rules, stateWith({ prematureAttempts: 3 }))).toMatchObject({
      kind: "premature_exhausted",
      attempts: 4,
      tier: 3,
    });
  });
});

describe("decidePrerequisites", () => {
  it("is null when every prerequisite is met before the batch", () => {
    const progress = progressOf(["search"], ["fetch", { id: 7 }]);
    expect(
      decidePrerequisites([call("fetch"), call("answer", { id: 7 })], rules, stateWith({ progress })),
    ).toBeNull();
  });

  it("does not count a prerequisite called earlier in the same batch", () => {
    const decision = decidePrerequisites([call("search"), call("fetch")], rules, stateWith());
    expect(decision).toMatchObject({
      kind: "prerequisite",
      attempt: 1,
      violations: [{ toolName: "fetch", missing: ["search"], described: ["search"] }],
    });
  });

  it("matches arg-matched prerequisites on the argument's value", () => {
    const progress = progressOf(["search"], ["fetch", { id: 7 }]);
    const decision = decidePrerequisites([call("answer", { id: 8 })], rules, stateWith({ progress }));
    expect(decision?.violations).toEqual([
      { toolName: "answer", missing: ["fetch"], described: ["fetch (with id=8)"] },
    ]);
  });

  it("exhausts on the violation past maxPrereqViolations", () => {
    const decision = decidePrerequisites([call("fetch")], rules, stateWith({ prereqViolations: 2 }));
    expect(decision).toMatchObject({ kind: "prerequisite_exhausted", attempts: 3 });
  });
});

describe("decideEnforcement", () => {
  it("executes a batch that breaks no rule", () => {
    const calls = [call("search")];
    expect(decideEnforcement(calls, rules, stateWith())).toEqual({ kind: "execute", calls });
  });

  it("checks premature terminal calls before prerequisites", () => {
    // answer is premature and also lacks its prerequisite: the step decision wins.
    expect(decideEnforcement([call("answer", { id: 1 })], rules, stateWith()).kind).toBe("premature");
  });

  it("then checks prerequisites", () => {
    expect(decideEnforcement([call("fetch")], rules, stateWith()).kind).toBe("prerequisite");
  });

  it("executes anything with step enforcement off", () => {
    const calls = [call("answer", { id: 1 })];
    expect(decideEnforcement(calls, { ...rules, stepEnforcement: false }, stateWith())).toEqual({
      kind: "execute",
      calls,
    });
  });
});

describe("countersAfter", () => {
  const before: GuardCounters = {
    consecutiveRetries: 2,
    consecutiveToolErrors: 1,
    prematureAttempts: 1,
    prereqViolations: 1,
  };
  const calls = [call("search")];
  const cases: [Decision, Partial<GuardCounters>][] = [
    [{ kind: "accept", calls, rescued: false }, { consecutiveRetries: 0 }],
    [{ kind: "retry", raw: "", attempt: 3 }, { consecutiveRetries: 3 }],
    [{ kind: "unknown_tools", calls, unknown: ["x"], raw: "", attempt: 3 }, { consecutiveRetries: 3 }],
    [{ kind: "retries_exhausted", raw: "", attempts: 4, wasText: true }, { consecutiveRetries: 4 }],
    [
      { kind: "malformed_args", calls, malformed: [], attempt: 2 },
      { consecutiveRetries: 0, consecutiveToolErrors: 2 },
    ],
    [
      { kind: "malformed_args_exhausted", calls, malformed: [], attempts: 3 },
      { consecutiveRetries: 0, consecutiveToolErrors: 3 },
    ],
    [
      { kind: "premature", calls, terminalTool: "answer", pending: [], tier: 2, attempt: 2 },
      { prematureAttempts: 2 },
    ],
    [
      { kind: "premature_exhausted", calls, terminalTool: "answer", pending: [], tier: 3, attempts: 4 },
      { prematureAttempts: 4 },
    ],
    [{ kind: "prerequisite", calls, violations: [], attempt: 2 }, { prereqViolations: 2 }],
    [{ kind: "prerequisite_exhausted", calls, violations: [], attempts: 3 }, { prereqViolations: 3 }],
    [{ kind: "execute", calls }, {}],
    [{ kind: "finish", result: 1 }, {}],
    [{ kind: "continue" }, {}],
    [
      {
        kind: "tool_errors_exhausted",
        toolName: "search",
        errorName: "Error",
        errorMessage: "",
        attempts: 3,
      },
      {},
    ],
  ];

  it.each(cases)("after %o: sets only its own streak", (decision, changed) => {
    expect(countersAfter(before, decision)).toEqual({ ...before, ...changed });
  });

  it("does not modify the counters it is given", () => {
    const frozen = Object.freeze({ ...before });
    expect(() => countersAfter(frozen, { kind: "retry", raw: "", attempt: 3 })).not.toThrow();
    expect(frozen.consecutiveRetries).toBe(2);
  });
});

describe("countersAfterBatch", () => {
  const before: GuardCounters = {
    consecutiveRetries: 0,
    consecutiveToolErrors: 1,
    prematureAttempts: 2,
    prereqViolations: 1,
  };

  it("adds one tool error for a failed batch and leaves the step streaks", () => {
    expect(countersAfterBatch(before, true)).toEqual({ ...before, consecutiveToolErrors: 2 });
  });

  it("resets tool errors, premature attempts and prerequisite violations after a clean batch", () => {
    expect(countersAfterBatch(before, false)).toEqual({
      consecutiveRetries: 0,
      consecutiveToolErrors: 0,
      prematureAttempts: 0,
      prereqViolations: 0,
    });
  });
});

describe("batchFailed and decideBatch", () => {
  const ok = (tool: string, value: unknown = `${tool} ok`): CallOutcome => ({ tool, status: "ok", value });
  const failed = (tool: string): CallOutcome => ({
    tool,
    callId: "abc123def",
    status: "error",
    errorName: "TypeError",
    errorMessage: "boom",
  });
  const resolution: CallOutcome = { tool: "search", status: "resolution_error" };

  it("a ToolResolutionError does not fail a batch; any other error does", () => {
    expect(batchFailed([ok("search"), resolution])).toBe(false);
    expect(batchFailed([ok("search"), failed("fetch")])).toBe(true);
  });

  it("continues after a batch without a terminal success", () => {
    expect(decideBatch([ok("search"), resolution], rules, { consecutiveToolErrors: 0 })).toEqual({
      kind: "continue",
    });
  });

  it("finishes with the terminal tool's value (null when it returned nothing)", () => {
    expect(
      decideBatch([ok("search"), ok("answer", { done: true })], rules, { consecutiveToolErrors: 0 }),
    ).toEqual({
      kind: "finish",
      result: { done: true },
    });
    expect(decideBatch([{ tool: "answer", status: "ok" }], rules, { consecutiveToolErrors: 0 })).toEqual({
      kind: "finish",
      result: null,
    });
  });

  it("continues after a failing batch within the budget", () => {
    expect(
      decideBatch([failed("search")], rules, { consecutiveToolErrors: DEFAULT_LIMITS.maxToolErrors }),
    ).toEqual({
      kind: "continue",
    });
  });

  it("exhausts past maxToolErrors, naming the first failing call; this wins over a terminal success", () => {
    const decision = decideBatch([ok("answer"), failed("fetch")], rules, { consecutiveToolErrors: 3 });
    expect(decision).toEqual({
      kind: "tool_errors_exhausted",
      toolName: "fetch",
      callId: "abc123def",
      errorName: "TypeError",
      errorMessage: "boom",
      attempts: 3,
    });
  });

  it("fills in a failure's missing name and message", () => {
    const decision = decideBatch([{ tool: "fetch", status: "error" }], rules, { consecutiveToolErrors: 3 });
    expect(decision).toEqual({
      kind: "tool_errors_exhausted",
      toolName: "fetch",
      errorName: "Error",
      errorMessage: "",
      attempts: 3,
    });
  });
});
