/**
 * Scenarios that start mid-run: the persisted workflow snapshot after the first k reference
 * steps, and the tool state those steps leave behind when a stored snapshot is replayed.
 */
import { createActor } from "xstate";
import { ContextManager, NoCompact } from "../../src/context/index.ts";
import { type Message, MessageType } from "../../src/core/messages.ts";
import type { Workflow } from "../../src/core/workflow.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import type { WorkflowSnapshot } from "../../src/machines/workflow.machine.ts";
import type { WorkflowConfig } from "../../src/machines/workflow-context.ts";
import { hangUntilAborted, ScriptedClient, toolCall } from "../../src/testing/index.ts";
import type { EvalScenario } from "../scenarios/scenario.ts";

/** Raised when a scenario's reference prefix does not run cleanly to the snapshot point. */
export class StartSnapshotError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StartSnapshotError";
  }
}

/**
 * Play the first `scenario.startAfterSteps` reference calls through the workflow machine (with
 * the run's tools, so their state advances, and no compaction, so the snapshot holds the whole
 * mid-run history) and persist the actor as the next LLM call starts. The snapshot is JSON
 * round-tripped, as if read from disk.
 */
export async function createStartSnapshot(
  scenario: EvalScenario,
  workflow: Workflow,
  config: WorkflowConfig,
  runId: string,
): Promise<unknown> {
  const steps = scenario.startAfterSteps;
  const script = [
    ...scenario.reference.slice(0, steps).map((step) => toolCall(step.tool, step.args, step.thought)),
    hangUntilAborted(),
  ];
  const runner = new WorkflowRunner({
    client: new ScriptedClient(script),
    contextManager: new ContextManager({ strategy: new NoCompact(), budgetTokens: scenario.budgetTokens }),
    maxIterations: scenario.maxIterations,
  });
  const actor = createActor(runner.machineFor(workflow), {
    input: { ...runner.inputFor(workflow, scenario.userMessage, { runId }), config },
  });
  const persisted = new Promise<unknown>((resolve, reject) => {
    actor.subscribe({
      next: (snapshot: WorkflowSnapshot) => {
        if (snapshot.status !== "active") {
          reject(
            new StartSnapshotError(`${scenario.id}: the reference prefix ended the run before step ${steps}`),
          );
        } else if (snapshot.value === "infer" && snapshot.context.iteration === steps + 1) {
          if (snapshot.context.progress.completedSteps.length === 0 && steps > 0) {
            reject(new StartSnapshotError(`${scenario.id}: the reference prefix completed no step`));
          }
          resolve(JSON.parse(JSON.stringify(actor.getPersistedSnapshot())));
          actor.stop();
        }
      },
      error: reject,
    });
  });
  actor.start();
  return persisted;
}

/**
 * Re-run the successful calls of a stored history against fresh tools, so stateful tools hold
 * the state the stored run had reached.
 */
export async function restoreToolState(workflow: Workflow, messages: readonly Message[]): Promise<void> {
  const failed = new Set(
    messages
      .filter(
        (message) => message.metadata.type === MessageType.TOOL_RESULT && message.content.startsWith("[Tool"),
      )
      .map((message) => message.toolCallId),
  );
  const executed = new Set(
    messages
      .filter((message) => message.metadata.type === MessageType.TOOL_RESULT)
      .map((message) => message.toolCallId),
  );
  for (const message of messages) {
    if (message.metadata.type !== MessageType.TOOL_CALL) continue;
    for (const call of message.toolCalls ?? []) {
      const tool = workflow.tools[call.name];
      if (!tool || !executed.has(call.callId) || failed.has(call.callId)) continue;
      try {
        await tool.execute(tool.spec.parameters.parse(call.args) as Record<string, unknown>);
      } catch {
        // A call that fails on replay failed the same way when it was recorded as a success: ignore.
      }
    }
  }
}
