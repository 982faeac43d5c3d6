import { describe, expect, it } from "vitest";
import { createGuardCounters, decideResponse } from "../../src/guardrails/decisions.ts";

const rules = {
  toolNames: ["get_weather", "respond"],
  rescueEnabled: true,
  maxRetriesPerStep: 3,
  maxToolErrors: 2,
};

describe("decideResponse: the prose policy", () => {
  it("takes clean prose as a call of the prose tool, with no retry", () => {
    const decision = decideResponse(
      { content: "Paris is in France." },
      { ...rules, proseAnswerTool: "respond" },
      createGuardCounters(),
    );
    expect(decision).toEqual({
      kind: "accept",
      calls: [{ tool: "respond", args: { message: "Paris is in France." } }],
      rescued: false,
      prose: true,
    });
  });

  it("still retries prose without the policy", () => {
    const decision = decideResponse({ content: "Paris is in France." }, rules, createGuardCounters());
    expect(decision.kind).toBe("retry");
  });

  it("still retries text that mentions a tool, and empty text", () => {
    const withPolicy = { ...rules, proseAnswerTool: "respond" };
    expect(
      decideResponse({ content: "I should call get_weather first." }, withPolicy, createGuardCounters()).kind,
    ).toBe("retry");
    expect(decideResponse({ content: "  " }, withPolicy, createGuardCounters()).kind).toBe("retry");
  });

  it("still rescues a call written as text", () => {
    const decision = decideResponse(
      { content: '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```' },
      { ...rules, proseAnswerTool: "respond" },
      createGuardCounters(),
    );
    expect(decision).toMatchObject({
      kind: "accept",
      rescued: true,
      calls: [{ tool: "get_weather", args: { city: "Paris" } }],
    });
  });

  it("counts a near-miss name and accepts it under the offered name", () => {
    const decision = decideResponse(
      [{ tool: "Get-Weather", args: { city: "Paris" } }],
      rules,
      createGuardCounters(),
    );
    expect(decision).toEqual({
      kind: "accept",
      calls: [{ tool: "get_weather", args: { city: "Paris" } }],
      rescued: false,
      renamed: 1,
    });
  });
});
