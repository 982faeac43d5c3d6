/**
 * An error in a run's first step stays in that run: `run()` / `resume()` / `runInference` reject
 * with it, and nothing reaches XState's unhandled error report (which rethrows outside any promise
 * and ends the process). Each case runs in a process of its own, which must exit 0.
 */
import { execa } from "execa";
import { describe, expect, it } from "vitest";

const FIXTURE = new URL("../fixtures/loop/start-failure.ts", import.meta.url).pathname;

async function runCase(name: string) {
  const child = await execa(process.execPath, ["--import", "tsx", FIXTURE, name], {
    reject: false,
    timeout: 20_000,
  });
  const lines = child.stdout.split("\n").filter((line) => line.startsWith("{"));
  return { exitCode: child.exitCode, stderr: child.stderr, settled: lines.map((line) => JSON.parse(line)) };
}

describe("a failure in the first step rejects the run and leaves the process alive", () => {
  it.each([
    ["throwing-compactor", { name: "CompactorFailure", message: "the compactor broke on its first call" }],
    ["nan-estimator", { name: "RangeError", message: expect.stringContaining("NaN") }],
    ["non-string-content", { name: "InvalidMessageError", field: "initialMessages[1].content" }],
    ["damaged-snapshot", { name: "InvalidSnapshotError", field: "context.iteration" }],
    ["unknown-state-snapshot", { name: "Error", message: expect.stringContaining("nowhere") }],
    ["inference-throwing-compactor", { name: "CompactorFailure" }],
  ])(
    "%s",
    async (name, expected) => {
      const { exitCode, stderr, settled } = await runCase(name);
      expect(settled).toEqual([expect.objectContaining({ outcome: "rejected", ...expected })]);
      expect(stderr).toBe("");
      expect(exitCode).toBe(0);
    },
    30_000,
  );
});
