/**
 * The Guardrails facade: every action `check` returns (execute, retry, tool_error, step_blocked,
 * fatal for each exhausted budget), what `record` and `recordToolError` do to the streaks.
 */
import { describe, expect, it } from "vitest";
import type { ToolCall } from "../../src/core/types.ts";
import { Guardrails, type GuardrailsOptions } from "../../src/guardrails/guardrails.ts";

const call = (tool: string, args: Record<string, unknown> = {}): ToolCall => ({ tool, args });
const broken = (tool: string): ToolCall => ({ tool, args: {}, argumentsError: "invalid JSON; received {" });

function guardrails(options: Partial<GuardrailsOptions> = {}) {
  return new Guardrails({
    toolNames: ["search", "lookup", "answer"],
    requiredSteps: ["search", "lookup"],
    terminalTool: "answer",
    toolPrerequisites: { lookup: ["search"] },
    ...options,
  });
}

describe("Guardrails.check", () => {
  it("execute: valid calls, rescued text too", () => {
    const rails = guardrails();
    expect(rails.check([call("search", { q: "x" })])).toEqual({
      action: "execute",
      toolCalls: [call("search", { q: "x" })],
    });
    expect(rails.check({ content: '{"tool": "search", "args": {"q": "y"}}' })).toEqual({
      action: "execute",
      toolCalls: [call("search", { q: "y" })],
    });
  });

  it("retry: text without a call, with a user-channel nudge (custom retryNudge honoured)", () => {
    const result = guardrails().check({ content: "I think so." });
    expect(result.action).toBe("retry");
    expect(result.nudge).toMatchObject({ role: "user", kind: "retry" });
    expect(result.nudge?.content).toContain("not a valid tool call");
    expect(guardrails({ retryNudge: (raw) => `again: ${raw}` }).check({ content: "hm" }).nudge?.content).toBe(
      "again: hm",
    );
  });

  it("retry: rescuable text with rescue off", () => {
    const rails = guardrails({ rescueEnabled: false });
    expect(rails.check({ content: '{"tool": "search", "args": {}}' }).action).toBe("retry");
  });

  it("retry: an empty call list", () => {
    expect(guardrails().check([])).toMatchObject({ action: "retry", nudge: { role: "user", kind: "retry" } });
  });

  it("tool_error: an unknown tool, answered on the tool channel, with the blocked calls", () => {
    const result = guardrails().check([call("search"), call("nope")]);
    expect(result.action).toBe("tool_error");
    // Every call of the batch needs its id answered, so the caller gets them all.
    expect(result.toolCalls).toEqual([call("search"), call("nope")]);
    expect(result.nudge?.content.split("\n")).toHaveLength(2);
    expect(result.nudge).toMatchObject({ role: "tool", kind: "unknown_tool" });
    expect(result.nudge?.content).toContain("Available tools: search, lookup, answer");
  });

  it("tool_error: malformed arguments, with the blocked calls and a ToolArgumentError nudge", () => {
    const batch = [broken("search")];
    const result = guardrails().check(batch);
    expect(result.action).toBe("tool_error");
    expect(result.toolCalls).toEqual(batch);
    expect(result.nudge).toMatchObject({ role: "tool", kind: "malformed_args" });
    expect(result.nudge?.content).toContain("ToolArgumentError");
  });

  it("step_blocked: a premature terminal call, escalating", () => {
    const rails = guardrails();
    const first = rails.check([call("answer")]);
    expect(first).toMatchObject({ action: "step_blocked", toolCalls: [call("answer")] });
    expect(first.nudge).toMatchObject({ role: "tool", kind: "step", tier: 1 });
    expect(rails.check([call("answer")]).nudge?.tier).toBe(2);
  });

  it("step_blocked: an unmet prerequisite", () => {
    const result = guardrails().check([call("lookup")]);
    expect(result).toMatchObject({ action: "step_blocked", toolCalls: [call("lookup")] });
    expect(result.nudge).toMatchObject({ role: "tool", kind: "prerequisite", tier: 1 });
    expect(result.nudge?.content).toMatch(/^\[PrereqError\] You cannot call lookup yet: call search first/);
  });

  it("fatal: retries exhausted after maxRetries nudges (text and unknown tools share the streak)", () => {
    const rails = guardrails({ maxRetries: 2 });
    expect(rails.check({ content: "a" }).action).toBe("retry");
    expect(rails.check([call("nope")]).action).toBe("tool_error");
    const result = rails.check({ content: "c" });
    expect(result).toEqual({
      action: "fatal",
      reason: "Retries exhausted: 3 consecutive responses without a valid tool call",
    });
    expect(rails.errors.retriesExhausted).toBe(true);
  });

  it("a valid call ends the retry streak", () => {
    const rails = guardrails({ maxRetries: 1 });
    rails.check({ content: "a" });
    rails.check([call("search")]);
    expect(rails.errors.retries).toBe(0);
    expect(rails.check({ content: "b" }).action).toBe("retry");
  });

  it("malformed arguments end the retry streak too (they are a tool error, not a retry)", () => {
    const rails = guardrails({ maxRetries: 1 });
    rails.check({ content: "a" });
    rails.check([broken("search")]);
    expect(rails.errors.retries).toBe(0);
    expect(rails.check({ content: "b" }).action).toBe("retry");
  });

  it("fatal: step enforcement exhausted on the premature attempt past maxPrematureAttempts", () => {
    const rails = guardrails({ maxPrematureAttempts: 1 });
    expect(rails.check([call("answer")]).action).toBe("step_blocked");
    expect(rails.check([call("answer")])).toEqual({
      action: "fatal",
      toolCalls: [call("answer")],
      reason: "Step enforcement exhausted: terminal tool called 2 times with pending steps [search, lookup]",
    });
  });

  it("fatal: prerequisites exhausted on the violation past maxPrereqViolations", () => {
    const rails = guardrails({ maxPrereqViolations: 1 });
    expect(rails.check([call("lookup")]).action).toBe("step_blocked");
    expect(rails.check([call("lookup")])).toEqual({
      action: "fatal",
      toolCalls: [call("lookup")],
      reason: "Prerequisites violated 2 times in a row",
    });
  });

  it("fatal: malformed arguments past maxToolErrors", () => {
    const rails = guardrails({ maxToolErrors: 1 });
    expect(rails.check([broken("search")]).action).toBe("tool_error");
    const result = rails.check([broken("lookup")]);
    expect(result).toEqual({
      action: "fatal",
      toolCalls: [broken("lookup")],
      reason:
        "Tool errors exhausted: the arguments of 'lookup' were not a JSON object (invalid JSON; received {)",
    });
  });

  it("malformed arguments and failing tools drain the same budget", () => {
    const rails = guardrails({ maxToolErrors: 1 });
    expect(rails.recordToolError("search", new TypeError("down"))).toBeNull();
    expect(rails.check([broken("search")]).action).toBe("fatal");
  });
});

describe("Guardrails.record and recordToolError", () => {
  it("record returns true only for a terminal tool with every required step satisfied", () => {
    const rails = guardrails();
    expect(rails.record(["search"])).toBe(false);
    expect(rails.record(["lookup"])).toBe(false);
    expect(rails.record(["answer"])).toBe(true);
  });

  it("record returns false for a terminal recorded while steps are pending", () => {
    const rails = guardrails();
    expect(rails.record(["search", "answer"])).toBe(false);
    expect(rails.enforcer.pending()).toEqual(["lookup"]);
  });

  it("record keeps arguments for arg-matched prerequisites", () => {
    const rails = guardrails({ toolPrerequisites: { answer: [{ tool: "lookup", matchArg: "id" }] } });
    rails.record(["search", "lookup"], [{}, { id: 4 }]);
    expect(rails.check([call("answer", { id: 5 })]).action).toBe("step_blocked");
    expect(rails.check([call("answer", { id: 4 })]).action).toBe("execute");
  });

  it("record resets the premature, prerequisite and tool-error streaks", () => {
    const rails = guardrails({ maxPrematureAttempts: 1, maxPrereqViolations: 1, maxToolErrors: 1 });
    rails.check([call("answer")]);
    rails.check([call("lookup")]);
    rails.check([broken("search")]);
    expect([
      rails.enforcer.prematureAttempts,
      rails.enforcer.prereqViolations,
      rails.errors.toolErrors,
    ]).toEqual([1, 1, 1]);
    rails.record(["search"]);
    expect([
      rails.enforcer.prematureAttempts,
      rails.enforcer.prereqViolations,
      rails.errors.toolErrors,
    ]).toEqual([0, 0, 0]);
    // Each budget is whole again: one more violation of each kind is a nudge, not fatal.
    expect(rails.check([call("answer")]).action).toBe("step_blocked");
    expect(rails.check([broken("search")]).action).toBe("tool_error");
  });

  it("recordToolError returns null within the budget and fatal once it is exhausted", () => {
    const rails = guardrails();
    expect(rails.recordToolError("search", new TypeError("down"))).toBeNull();
    expect(rails.recordToolError("search", new TypeError("down"))).toBeNull();
    expect(rails.recordToolError("lookup", new RangeError("bad id"))).toEqual({
      action: "fatal",
      reason: "Tool errors exhausted: 'lookup' failed (RangeError: bad id)",
    });
  });

  it("recordToolError describes a thrown non-Error", () => {
    const rails = guardrails({ maxToolErrors: 0 });
    expect(rails.recordToolError("search", "offline")?.reason).toBe(
      "Tool errors exhausted: 'search' failed (offline)",
    );
  });

  it("a clean batch recorded between failures restarts the tool-error count", () => {
    const rails = guardrails({ maxToolErrors: 1 });
    expect(rails.recordToolError("search", new Error("x"))).toBeNull();
    rails.record(["search"]);
    expect(rails.recordToolError("search", new Error("y"))).toBeNull();
  });
});

describe("Guardrails options", () => {
  it("accepts one terminal tool or several", () => {
    const rails = guardrails({ terminalTool: ["answer", "lookup"], requiredSteps: [] });
    expect(rails.terminalTools).toEqual(["answer", "lookup"]);
    expect(rails.record(["lookup"])).toBe(true);
  });

  it("rejects a terminalTool that is not in toolNames with a RangeError", () => {
    expect(() => guardrails({ terminalTool: "finish" })).toThrow(
      new RangeError("terminalTool finish is not in toolNames"),
    );
    expect(() => guardrails({ terminalTool: ["answer", "finish", "done"] })).toThrow(
      new RangeError("terminalTool finish, done is not in toolNames"),
    );
  });

  it.each([
    [{ maxRetries: -1 }, /maxRetries must be a non-negative integer/],
    [{ maxToolErrors: 1.5 }, /maxToolErrors must be a non-negative integer/],
    [{ maxPrematureAttempts: -2 }, /maxPrematureAttempts must be a non-negative integer/],
    [{ maxPrereqViolations: Number.NaN }, /maxPrereqViolations must be a non-negative integer/],
  ])("rejects %o with a RangeError", (options, message) => {
    expect(() => guardrails(options)).toThrow(RangeError);
    expect(() => guardrails(options)).toThrow(message);
  });
});
