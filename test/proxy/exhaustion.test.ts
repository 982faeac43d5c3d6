/**
 * The proxy's decisions on an exhausted guardrail loop: whether the client lets the model answer in
 * text, the raw output reported, and which errors are exhaustion.
 */
import { describe, expect, it } from "vitest";
import {
  BackendError,
  MaxIterationsError,
  ToolCallError,
  ToolExecutionError,
  WorkflowCancelledError,
} from "../../src/core/errors.ts";
import { allowsTextAnswer, exhaustionOf, rawOutputOf } from "../../src/proxy/exhaustion.ts";

describe("allowsTextAnswer", () => {
  it("is true without tool_choice or with auto, false when a call is demanded", () => {
    expect(allowsTextAnswer({})).toBe(true);
    expect(allowsTextAnswer({ tool_choice: "auto" })).toBe(true);
    expect(allowsTextAnswer({ tool_choice: "required" })).toBe(false);
    expect(allowsTextAnswer({ tool_choice: { type: "function", function: { name: "f" } } })).toBe(false);
  });
});

describe("rawOutputOf", () => {
  it("gives text as it came and calls as JSON, malformed arguments as their error", () => {
    expect(rawOutputOf({ content: "just prose" })).toBe("just prose");
    expect(rawOutputOf(null)).toBe("");
    const raw = rawOutputOf([
      { tool: "get_weather", args: { city: "Oslo" } },
      { tool: "get_weather", args: {}, argumentsError: 'invalid JSON; received {"city": "Os' },
    ]);
    expect(JSON.parse(raw)).toEqual([
      { name: "get_weather", arguments: { city: "Oslo" } },
      { name: "get_weather", arguments_error: 'invalid JSON; received {"city": "Os' },
    ]);
  });
});

describe("exhaustionOf", () => {
  const last = [{ tool: "f", args: {}, argumentsError: "not a JSON object; received 42" }];

  it("keeps a ToolCallError, and turns malformed arguments and the call limit into one with the raw output", () => {
    const own = new ToolCallError("Retries exhausted", "prose");
    expect(exhaustionOf(own, null)).toBe(own);
    const malformed = exhaustionOf(new ToolExecutionError("f", new Error("bad")), last);
    expect(malformed).toBeInstanceOf(ToolCallError);
    expect(malformed?.message).toMatch(/^Retries exhausted: the arguments of 'f' were malformed/);
    expect(malformed?.rawResponse).toContain("received 42");
    const spent = exhaustionOf(new MaxIterationsError(4, [], []), { content: "still prose" });
    expect(spent?.rawResponse).toBe("still prose");
  });

  it("is null for anything else", () => {
    expect(exhaustionOf(new BackendError(500, "boom"), null)).toBeNull();
    expect(exhaustionOf(new WorkflowCancelledError([], [], 1), null)).toBeNull();
    expect(exhaustionOf(new Error("surprise"), null)).toBeNull();
  });
});
