/**
 * runBatch: calls start in batch order, at most `concurrency` at once, a call that runs alone
 * only when nothing else runs; nothing starts once stopped; the first failure rejects at once.
 */
import { describe, expect, it } from "vitest";
import { type BatchSchedule, runBatch } from "../../src/machines/tool-batch.ts";

/** A batch whose calls settle when the test says so; the log says what started and settled when. */
function controlled(count: number) {
  const log: string[] = [];
  const settle = new Map<number, { resolve: () => void; reject: (error: unknown) => void }>();
  let running = 0;
  let most = 0;
  const run = (index: number) =>
    new Promise<void>((resolve, reject) => {
      running += 1;
      most = Math.max(most, running);
      log.push(`start ${index}`);
      settle.set(index, {
        resolve: () => {
          running -= 1;
          log.push(`end ${index}`);
          resolve();
        },
        reject,
      });
    });
  const finish = async (index: number) => {
    settle.get(index)?.resolve();
    await new Promise((resolve) => setTimeout(resolve, 0));
  };
  return { count, log, run, finish, settle, most: () => most };
}

const schedule = (concurrency: number, alone: number[] = [], stopped = () => false): BatchSchedule => ({
  concurrency,
  runsAlone: (index) => alone.includes(index),
  stopped,
});

describe("runBatch", () => {
  it("starts calls in batch order, at most `concurrency` at once, the next as one ends", async () => {
    const batch = controlled(5);
    const done = runBatch(batch.count, schedule(2), batch.run);
    expect(batch.log).toEqual(["start 0", "start 1"]);
    await batch.finish(1);
    expect(batch.log).toEqual(["start 0", "start 1", "end 1", "start 2"]);
    await batch.finish(0);
    await batch.finish(2);
    await batch.finish(3);
    await batch.finish(4);
    await done;
    expect(batch.most()).toBe(2);
    expect(batch.log.filter((line) => line.startsWith("start"))).toEqual([
      "start 0",
      "start 1",
      "start 2",
      "start 3",
      "start 4",
    ]);
  });

  it("runs the whole batch at once when the cap allows, and one at a time with 1", async () => {
    const wide = controlled(3);
    const all = runBatch(wide.count, schedule(8), wide.run);
    expect(wide.log).toEqual(["start 0", "start 1", "start 2"]);
    for (const index of [2, 0, 1]) await wide.finish(index);
    await all;
    const narrow = controlled(3);
    const one = runBatch(narrow.count, schedule(1), narrow.run);
    for (const index of [0, 1, 2]) await narrow.finish(index);
    await one;
    expect(narrow.log).toEqual(["start 0", "end 0", "start 1", "end 1", "start 2", "end 2"]);
  });

  it("runs a call alone: it waits for the calls before it, and the next waits for it", async () => {
    const batch = controlled(4);
    const done = runBatch(batch.count, schedule(3, [1]), batch.run);
    expect(batch.log).toEqual(["start 0"]);
    await batch.finish(0);
    expect(batch.log).toEqual(["start 0", "end 0", "start 1"]);
    await batch.finish(1);
    expect(batch.log).toEqual(["start 0", "end 0", "start 1", "end 1", "start 2", "start 3"]);
    await batch.finish(3);
    await batch.finish(2);
    await done;
  });

  it("starts nothing more once stopped, and resolves when the calls running have settled", async () => {
    let stopped = false;
    const batch = controlled(4);
    const done = runBatch(
      batch.count,
      schedule(2, [], () => stopped),
      batch.run,
    );
    stopped = true;
    await batch.finish(0);
    await batch.finish(1);
    await done;
    expect(batch.log).toEqual(["start 0", "start 1", "end 0", "end 1"]);
  });

  it("rejects with the first failure at once, starting nothing more", async () => {
    const batch = controlled(4);
    const done = runBatch(batch.count, schedule(2), batch.run);
    const failure = new Error("checkpoint store down");
    batch.settle.get(0)?.reject(failure);
    await expect(done).rejects.toBe(failure);
    await batch.finish(1);
    expect(batch.log).toEqual(["start 0", "start 1", "end 1"]);
  });

  it("resolves an empty batch", async () => {
    await expect(runBatch(0, schedule(1), () => Promise.reject(new Error("never")))).resolves.toBe(undefined);
  });
});
