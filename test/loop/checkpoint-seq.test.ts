/** Checkpoint `seq` goes on across resumes, so the highest `seq` is a run's latest checkpoint. */
import { describe, expect, it } from "vitest";
import type { CheckpointMeta } from "../../src/loop/checkpoint.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import { createPassthrough, rejectionOf, weatherWorkflow } from "../helpers/workflows.ts";

class Crash extends Error {}

interface Stored {
  snapshot: unknown;
  meta: CheckpointMeta;
}

/**
 * A store that keeps every checkpoint (JSON) and a process that "crashes" right after storing its
 * `crashAt`-th checkpoint (the run fails there, as a killed process would stop).
 */
function storeWithCrashes() {
  const stored: Stored[] = [];
  const processCheckpoint = (crashAt: number) => {
    let taken = 0;
    return (snapshot: unknown, meta: CheckpointMeta) => {
      stored.push(JSON.parse(JSON.stringify({ snapshot, meta })));
      taken += 1;
      if (taken === crashAt) throw new Crash(`crashed after checkpoint ${meta.seq}`);
    };
  };
  /** What a store that keeps the highest `seq` resumes from. */
  const latest = () => stored.reduce((best, entry) => (entry.meta.seq > best.meta.seq ? entry : best));
  return { stored, processCheckpoint, latest };
}

describe("checkpoint seq across resumes", () => {
  it.each([
    ["with the stored meta", true],
    ["from the snapshot alone", false],
  ])("run, crash, resume, crash, resume: seq strictly increases (%s)", async (_, passMeta) => {
    const { workflow, executed } = weatherWorkflow();
    const { stored, processCheckpoint, latest } = storeWithCrashes();
    const runnerWith = (script: ConstructorParameters<typeof ScriptedClient>[0]) => {
      const client = new ScriptedClient(script);
      return { client, runner: new WorkflowRunner({ client, contextManager: createPassthrough() }) };
    };

    // Process 1: inference, tools, call_started, then it crashes.
    const first = runnerWith([toolCall("get_weather", { city: "Paris" })]);
    const crash = await rejectionOf(
      first.runner.run(workflow, "x", { promptVars: { user: "Ada" }, checkpoint: processCheckpoint(3) }),
    );
    expect(crash).toBeInstanceOf(Crash);
    first.client.assertDone();

    // Process 2 resumes the latest: the batch and the call again, call_done, the next inference's
    // checkpoint, crash.
    const second = runnerWith([]);
    const from2 = latest();
    await expect(
      second.runner.resume(workflow, from2.snapshot as never, {
        ...(passMeta && { meta: from2.meta }),
        checkpoint: processCheckpoint(4),
      }),
    ).rejects.toBeInstanceOf(Crash);

    // Process 3 resumes the latest (the second inference) and finishes.
    const third = runnerWith([toolCall("report_weather", { city: "Paris", weather: "sunny" })]);
    const from3 = latest();
    expect(from3.meta).toMatchObject({ reason: "inference", iteration: 2 });
    await expect(
      third.runner.resume(workflow, from3.snapshot as never, {
        ...(passMeta && { meta: from3.meta }),
        checkpoint: processCheckpoint(Number.POSITIVE_INFINITY),
      }),
    ).resolves.toEqual({ reported: "Paris: sunny" });
    third.client.assertDone();

    const seqs = stored.map((entry) => entry.meta.seq);
    expect(seqs).toEqual(seqs.map((_, index) => index + 1));
    expect(stored.map((entry) => `${entry.meta.reason}@${entry.meta.iteration}`)).toEqual([
      "inference@1",
      "tools@1",
      "call_started@1",
      // process 2
      "tools@1",
      "call_started@1",
      "call_done@1",
      "inference@2",
      // process 3
      "inference@2",
      "tools@2",
      "call_started@2",
      "call_done@2",
    ]);
    // Each snapshot carries its seq, so a resume without the meta counts on from it.
    expect(
      stored.map((entry) => (entry.snapshot as { context: { checkpointSeq: number } }).context.checkpointSeq),
    ).toEqual(seqs);
    expect(executed).toEqual(["get_weather:Paris", "report_weather:Paris"]);
  });
});
