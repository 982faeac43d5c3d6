import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { RunRow } from "../../eval/batch/row.ts";
import { batchConfigSchema, plannedRunsPerTarget } from "../../eval/cli/batch-eval.ts";
import { createBatchProgress, formatEta, overallEta } from "../../eval/cli/progress.ts";

function called(callback?: () => void): true {
  callback?.();
  return true;
}

/** A stream that keeps what is written; `tty` makes cli-progress draw bars into it. */
function fakeStream(tty: boolean): NodeJS.WriteStream & { text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      chunks.push(String(chunk));
      callback();
    },
  }) as unknown as NodeJS.WriteStream & { text: () => string };
  Object.assign(stream, {
    isTTY: tty,
    columns: 200,
    text: () => chunks.join(""),
    cursorTo: (_x: number, _y?: number, callback?: () => void) => called(callback),
    moveCursor: (_dx: number, _dy: number, callback?: () => void) => called(callback),
    clearLine: (_dir: number, callback?: () => void) => called(callback),
    clearScreenDown: (callback?: () => void) => called(callback),
  });
  return stream;
}

const row = (status: "done" | "error" = "done") =>
  ({ status, configLabel: "reforged", scenario: "basic_2step", accurate: status === "done" }) as RunRow;

describe("the overall ETA of a multi-target batch", () => {
  it("is the mean time per run made so far times the runs left, unknown before the first run", () => {
    expect(overallEta({ done: 0, total: 40, ran: 0, runningMs: 0 })).toBeNull();
    expect(overallEta({ done: 14, total: 40, ran: 4, runningMs: 8_000 })).toBe(52);
    expect(overallEta({ done: 40, total: 40, ran: 40, runningMs: 80_000 })).toBe(0);
    expect([formatEta(null), formatEta(42), formatEta(185), formatEta(3_725)]).toEqual([
      "--",
      "42s",
      "3m05s",
      "1h02m",
    ]);
  });

  it("counts runs already in the file as done but times only the runs made, across targets", () => {
    let clock = 0;
    const progress = createBatchProgress(8, fakeStream(false), () => clock);
    const first = progress.forTarget("1 llamaserver a", 4);
    first.start(1); // three of four already in the file
    clock += 2_000;
    first.update(row(), 1, 1);
    first.stop();
    expect(progress.state()).toEqual({ done: 4, total: 8, ran: 1, runningMs: 2_000 });
    clock += 30_000; // starting the next server is not a run
    const second = progress.forTarget("2 sim-model clean", 4);
    second.start(4);
    clock += 6_000;
    second.update(row(), 1, 4);
    expect(progress.state()).toEqual({ done: 5, total: 8, ran: 2, runningMs: 8_000 });
    expect(overallEta(progress.state())).toBe(12);
  });

  it("prints an overall line after each target's line when the stream is not a TTY", () => {
    let clock = 0;
    const stream = fakeStream(false);
    const progress = createBatchProgress(4, stream, () => clock);
    const target = progress.forTarget("1 sim-model clean", 4);
    target.start(4);
    clock += 1_000;
    target.update(row(), 1, 4);
    clock += 1_000;
    target.update(row("error"), 2, 4);
    expect(stream.text()).toContain("eval: 4 runs to go\noverall: 0/4 runs (0%), ETA --\n");
    expect(stream.text()).toMatch(/eval: 1\/4 runs \(25%\).*\noverall: 1\/4 runs \(25%\), ETA 3s\n/);
    expect(stream.text()).toMatch(
      /eval: 2\/4 runs \(50%\), 1 errors.*\noverall: 2\/4 runs \(50%\), ETA 2s\n/,
    );
  });

  it("draws the overall bar with done/total and the ETA above one bar per target on a TTY", () => {
    let clock = 0;
    const stream = fakeStream(true);
    const progress = createBatchProgress(6, stream, () => clock);
    const first = progress.forTarget("1 llamaserver tiny", 3);
    first.start(3);
    clock += 3_000;
    first.update(row(), 1, 3);
    first.update(row(), 2, 3);
    first.update(row(), 3, 3);
    first.stop();
    const second = progress.forTarget("2 sim-model clean", 3);
    second.start(3);
    clock += 1_000;
    second.update(row("error"), 1, 3);
    progress.log("batch: llama-server stopped\n");
    progress.stop();
    const text = stream.text();
    // 4 runs in 4 s: 1 s a run, 2 left.
    expect(text).toMatch(/overall \|[█░]+\| 4\/6 runs \| ETA 2s/);
    expect(text).toMatch(/1 llamaserver tiny \|[█░]+\| 3\/3 runs \| 0 errors \| reforged basic_2step ✓/);
    expect(text).toMatch(/2 sim-model clean \|[█░]+\| 1\/3 runs \| 1 errors \| reforged basic_2step ✗/);
    expect(text).toContain("batch: llama-server stopped\n");
  });
});

describe("the runs a batch plans", () => {
  it("are scenarios × configs × runs for each target", () => {
    const config = batchConfigSchema.parse({
      out: "x.jsonl",
      runs: 3,
      scenarios: ["basic_2step", "sequential_3step"],
      ablation: ["reforged", "bare"],
      targets: [{ backend: "sim-model" }, { backend: "sim-model", profile: "clean" }],
    });
    expect(plannedRunsPerTarget(config)).toBe(12);
  });
});
