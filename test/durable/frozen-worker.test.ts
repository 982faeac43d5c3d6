/**
 * The frozen worker, on the embedded queue: two real worker processes on one directory. The first
 * works the order runs until it is inside a chosen step, and is frozen there with SIGSTOP (a long
 * GC, a paused VM, a blocking tool); the second waits for the first's lock to go stale (the real
 * 10 s), takes the directory over and finishes every run; then the first is woken with SIGCONT.
 * Its writes are fenced on the directory's epoch: it stops (QueueFencedError, exit code 3) without
 * starting a tool, no effect is applied twice (counted by idempotency key from the effects log, as
 * the crash-point matrix counts them), the unsafe charge is started at most once per key, and no
 * finished run goes back to active. The workers: test/fixtures/durable/frozen-worker-child.ts.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createEmbeddedQueue } from "../../src/queue/index.ts";
import { crashHarness, effectsLog } from "../helpers/crash-harness.ts";

const RUNS = 4;
const CONCURRENCY = 2;
const DELAY_MS = 300;
const CHILD = new URL("../fixtures/durable/frozen-worker-child.ts", import.meta.url);

const { cleanups, tempDir, spawnFixture } = crashHarness("forge-frozen-worker-");

/** Where the first worker is frozen: in run-2, once the effects log shows it got there. */
const FREEZE_POINTS: Record<string, (lines: string[]) => boolean> = {
  // Inside the second model call (the one that asks for send_receipt): on waking, no batch may run.
  "mid-inference": (lines) => lines.filter((line) => line.startsWith("infer run-2 ")).length === 2,
  // Inside the unsafe charge_card: on waking it returns, and its checkpoint is refused.
  "mid-unsafe-tool": (lines) => lines.some((line) => line.startsWith("start charge_card run-2:")),
  // Inside the terminal finish: on waking, the run's completion is refused.
  "mid-terminal": (lines) => lines.some((line) => line.startsWith("start finish run-2:")),
};

/** Poll the effects log until `test` holds. */
async function waitForLog(dir: string, test: (lines: string[]) => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 45_000;
  while (!test(effectsLog(dir))) {
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; log:\n${effectsLog(dir).join("\n")}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The effects log's lines split into their words, and the pid each names. */
function parsed(lines: string[]) {
  return lines.map((line) => {
    const words = line.split(" ");
    return { kind: words[0], tool: words[1], key: words[2], pid: words.at(-1)?.replace("pid=", ""), line };
  });
}

/** How many keys (or runs) appear more than once among `lines`. */
function duplicates(values: (string | undefined)[]): number {
  const counts = new Map<string, number>();
  for (const value of values) counts.set(String(value), (counts.get(String(value)) ?? 0) + 1);
  return [...counts.values()].filter((count) => count > 1).length;
}

describe("a worker frozen past the lock's staleness, then woken after another took the directory", () => {
  it.each(Object.keys(FREEZE_POINTS))(
    "frozen %s: it stops without a tool call or a write; nothing is applied twice or reopened",
    async (point) => {
      const dir = tempDir();
      const queueDir = join(dir, "queue");
      const args = [queueDir, dir, String(RUNS), String(CONCURRENCY), String(DELAY_MS)];
      const first = spawnFixture(CHILD, args);
      const firstExit = new Promise<number | null>((resolve) => first.on("exit", (code) => resolve(code)));
      await waitForLog(dir, FREEZE_POINTS[point] ?? (() => false), `the first worker to reach ${point}`);
      first.kill("SIGSTOP");
      const firstPid = String(first.pid);

      const second = spawnFixture(CHILD, args);
      cleanups.push(() => {
        second.kill("SIGKILL");
      });
      const client = await createEmbeddedQueue({ dir: queueDir, mode: "client", onWarning: () => {} });
      cleanups.push(() => client.close());
      const deadline = Date.now() + 60_000;
      for (;;) {
        const runs = await client.list();
        if (runs.length === RUNS && runs.every((run) => run.status === "completed")) break;
        if (Date.now() > deadline) {
          throw new Error(
            `the second worker never finished the runs: ${JSON.stringify(runs.map((run) => run.status))}`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const beforeWaking = effectsLog(dir).length;

      first.kill("SIGCONT");
      const code = await Promise.race([
        firstExit,
        new Promise((resolve) => setTimeout(resolve, 15_000, "running")),
      ]);
      await new Promise((resolve) => setTimeout(resolve, 500)); // anything it would still write lands
      const lines = parsed(effectsLog(dir));
      const afterWaking = lines.slice(beforeWaking).filter((entry) => entry.pid === firstPid);
      const effects = lines.filter((entry) => entry.kind === "effect");
      const statuses = (await client.list()).map((run) => run.status);
      const figures = {
        point,
        runs: RUNS,
        effectsAppliedTwice: duplicates(effects.map((entry) => `${entry.tool} ${entry.key}`)),
        unsafeStartedTwice: duplicates(
          lines
            .filter((entry) => entry.kind === "start" && entry.tool === "charge_card")
            .map((entry) => entry.key),
        ),
        toolsStartedAfterWaking: afterWaking.filter((entry) => entry.kind === "start").length,
        finishedRunsReopened: statuses.filter((status) => status !== "completed").length,
        firstWorkerExit: code,
      };
      console.log(`frozen-worker ${JSON.stringify(figures)}`);

      expect(figures).toMatchObject({
        effectsAppliedTwice: 0,
        unsafeStartedTwice: 0,
        toolsStartedAfterWaking: 0,
        finishedRunsReopened: 0,
        firstWorkerExit: 3,
      });
      expect(afterWaking.map((entry) => entry.kind)).toContain("fenced");
      // Every run finished once, whoever did it; charged at most once (a charge the first worker
      // was inside when it was frozen is never started again, and ends with its process).
      for (let index = 1; index <= RUNS; index += 1) {
        const ofRun = (tool: string) =>
          effects.filter((entry) => entry.tool === tool && entry.key?.startsWith(`run-${index}:`));
        expect(ofRun("finish"), `finish of run-${index}`).toHaveLength(1);
        expect(ofRun("charge_card").length, `charge_card of run-${index}`).toBeLessThanOrEqual(1);
      }
      // The first worker exited without removing the second's lock, and the second works on.
      expect(existsSync(join(queueDir, "queue.lock"))).toBe(true);
      await client.enqueue("order", "run-after", { runId: "run-after" });
      expect(await client.result("run-after")).toBe("finish done for run-after");
    },
    120_000,
  );
});
