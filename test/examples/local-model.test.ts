import { describe, expect, it } from "vitest";
import { main } from "../../examples/local-model.ts";

describe("examples/local-model", () => {
  it("reports the weather after the guardrails refuse the premature report", async () => {
    const lines: string[] = [];
    expect(await main((line) => lines.push(line), {})).toBe("Paris: 22°C and sunny");
    expect(lines[0]).toBe("model: a scripted model, budget 8192 tokens");
    expect(lines.some((line) => line.startsWith("step_nudge: [StepEnforcementError]"))).toBe(true);
  });
});
