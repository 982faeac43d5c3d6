import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ABLATION_PRESETS } from "../../eval/ablation.ts";
import { planTasks } from "../../eval/batch/batch.ts";
import {
  EVAL_JOB,
  EvalJobError,
  evalJobOf,
  evalRunId,
  outcomeOf,
  parseEvalJob,
  queueBatchIdFor,
  queueBatchIdPath,
} from "../../eval/queue/eval-job.ts";
import { EvalWorkerBackendError, runEvalWorker } from "../../eval/queue/eval-worker.ts";
import { openEvalQueue } from "../../eval/queue/open-queue.ts";
import { assertRunId } from "../../src/queue/run-queue.ts";
import { scenario } from "./helpers.ts";

const workdir = () => mkdtempSync(join(tmpdir(), "forge-eval-worker-"));
const identity = { backend: "sim-model", model: "sim/clean", baseSeed: 0, stream: false };
const task = planTasks(identity, [scenario("basic_2step")], [ABLATION_PRESETS.reforged!], 1)[0]!;

describe("eval jobs", () => {
  it("map run keys to valid run ids: the same in one batch, another in another batch", () => {
    const keys = [task.key, "1", "a|b/c|d e|run0|seed0|mode-prompt|think-on", "x".repeat(500)];
    for (const key of keys) {
      const id = evalRunId("batch-a", key);
      expect(assertRunId(id)).toBe(id);
      expect(evalRunId("batch-a", key)).toBe(id);
      expect(evalRunId("batch-b", key)).not.toBe(id);
    }
    expect(new Set(keys.map((key) => evalRunId("batch-a", key))).size).toBe(keys.length);
  });

  it("give a new batch a new id under an old file's name, and a --resume the batch's own", () => {
    const rows = join(workdir(), "rows.jsonl");
    const first = queueBatchIdFor(rows, false);
    expect(queueBatchIdFor(rows, true)).toBe(first);
    const fresh = queueBatchIdFor(rows, false);
    expect(fresh).not.toBe(first);
    expect(queueBatchIdFor(rows, true)).toBe(fresh);
    writeFileSync(queueBatchIdPath(rows), "not an id\n");
    expect(() => queueBatchIdFor(rows, true)).toThrow(/does not hold a batch id/);
  });

  it("round-trip through a message and refuse what is not an eval run", () => {
    const job = evalJobOf(task, "sim-model", { profile: "clean" }, false);
    expect(parseEvalJob(EVAL_JOB, JSON.stringify(job))).toEqual(job);
    expect(() => parseEvalJob("weather", JSON.stringify(job))).toThrow(EvalJobError);
    expect(() => parseEvalJob(EVAL_JOB, "{not json")).toThrow(/not JSON/);
    expect(() => parseEvalJob(EVAL_JOB, JSON.stringify({ ...job, seed: "0" }))).toThrow(/seed/);
    expect(() => outcomeOf(task.key, { measurement: { status: "done" }, trace: { key: "other" } })).toThrow(
      /is the run of other/,
    );
  });
});

describe("--queue", () => {
  it("refuses a URL of another scheme as a usage error naming the ones it takes", async () => {
    await expect(openEvalQueue("amqp://127.0.0.1:5672", "worker")).rejects.toMatchObject({
      name: "EvalQueueSpecError",
      message: expect.stringMatching(/--queue: .*redis:\/\/.*postgres:\/\//),
    });
  });
});

describe("eval worker", () => {
  it("makes a queued run, fails a job that is not an eval run, and leaves the queue", async () => {
    const dir = join(workdir(), "queue");
    const producer = await openEvalQueue(dir, "collector");
    const job = evalJobOf(task, "sim-model", { profile: "clean" }, false);
    await producer.queue.enqueue(EVAL_JOB, JSON.stringify(job), { runId: evalRunId("rows.jsonl", task.key) });
    await producer.queue.enqueue("weather", "Weather in Paris?", { runId: "not-eval" });

    const summary = await runEvalWorker({ queue: await openEvalQueue(dir, "worker"), exitWhenIdle: true });
    expect(summary).toEqual({ completed: 1, failed: 1 });
    const made = outcomeOf(task.key, await producer.queue.result(evalRunId("rows.jsonl", task.key)));
    expect(made.measurement).toMatchObject({ status: "done", accurate: true });
    await expect(producer.queue.result("not-eval")).rejects.toMatchObject({ name: "EvalJobError" });
    await producer.queue.close();
  }, 60_000);

  it("hands back a run whose backend it cannot start and stops with EvalWorkerBackendError", async () => {
    const dir = join(workdir(), "queue");
    const producer = await openEvalQueue(dir, "collector");
    const job = evalJobOf(task, "llama-cpp", { model: join(dir, "missing.gguf") }, false);
    const runId = evalRunId("rows.jsonl", task.key);
    await producer.queue.enqueue(EVAL_JOB, JSON.stringify(job), { runId });

    await expect(runEvalWorker({ queue: await openEvalQueue(dir, "worker") })).rejects.toThrow(
      EvalWorkerBackendError,
    );
    // Waiting again, for a worker that can start it.
    expect(await producer.queue.get(runId)).toMatchObject({ status: "waiting", attempts: 1 });
    await producer.queue.close();
  }, 60_000);
});
