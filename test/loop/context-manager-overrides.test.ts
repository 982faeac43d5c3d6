/** The runner's per-run copy of a ContextManager (`forRun`) keeps what the caller overrode. */
import { describe, expect, it } from "vitest";
import { ContextManager } from "../../src/context/context-manager.ts";
import { NoCompact } from "../../src/context/no-compact.ts";
import type { Message } from "../../src/core/messages.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import { weatherWorkflow } from "../helpers/workflows.ts";

/** Three iterations: two lookups, then the report. */
const threeIterations = () => [
  toolCall("get_weather", { city: "Paris" }),
  toolCall("get_weather", { city: "Lyon" }),
  toolCall("report_weather", { city: "Paris", weather: "sunny" }),
];
const options = { strategy: new NoCompact(), budgetTokens: 10_000 };

class CountingManager extends ContextManager {
  readonly steps: number[] = [];
  override maybeCompact<T extends readonly Message[]>(
    messages: T,
    stepIndex = 0,
    stepHint = "",
  ): T | Message[] {
    this.steps.push(stepIndex);
    return super.maybeCompact(messages, stepIndex, stepHint);
  }
}

async function runWith(contextManager: ContextManager) {
  const { workflow } = weatherWorkflow();
  const client = new ScriptedClient(threeIterations());
  const runner = new WorkflowRunner({ client, contextManager });
  await expect(runner.run(workflow, "x", { promptVars: { user: "Ada" } })).resolves.toEqual({
    reported: "Paris: sunny",
  });
  client.assertDone();
}

describe("a ContextManager's overrides reach every run", () => {
  it("a subclass's maybeCompact is called once per iteration", async () => {
    const manager = new CountingManager(options);
    await runWith(manager);
    // The run's copy shares the subclass's array field (own properties are copied shallowly).
    expect(manager.steps).toEqual([0, 1, 2]);
  });

  it("a maybeCompact set on the instance is called once per iteration, on the run's copy", async () => {
    const manager = new ContextManager(options);
    const calls: { stepIndex: number | undefined; isOriginal: boolean }[] = [];
    manager.maybeCompact = function <T extends readonly Message[]>(
      this: ContextManager,
      messages: T,
      stepIndex?: number,
      stepHint?: string,
    ): T | Message[] {
      calls.push({ stepIndex, isOriginal: this === manager });
      return ContextManager.prototype.maybeCompact.call(this, messages, stepIndex, stepHint) as T | Message[];
    };
    await runWith(manager);
    expect(calls.map((call) => call.stepIndex)).toEqual([0, 1, 2]);
    // Still a copy per run: its counts and warnings are not the shared manager's.
    expect(calls.every((call) => !call.isOriginal)).toBe(true);
  });

  it("forRun copies are instances of the subclass, with state of their own", () => {
    const manager = new CountingManager({ ...options, warnAt: [0.5] });
    const copy = manager.forRun();
    expect(copy).toBeInstanceOf(CountingManager);
    expect(copy).not.toBe(manager);
    expect(copy.budgetTokens).toBe(10_000);
    const long: Message[] = [{ role: "user", content: "x".repeat(30_000), metadata: { type: "user_input" } }];
    copy.maybeCompact(long);
    expect(copy.takeWarnings()).toHaveLength(1);
    expect(manager.takeWarnings()).toEqual([]);
  });
});
