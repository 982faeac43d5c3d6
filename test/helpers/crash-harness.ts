/**
 * What the crash tests share: temporary directories and worker processes cleaned up after each
 * test (a stopped child is continued, then killed), and waiting for a line of a run's effects log
 * (`<dir>/effects.log`, written by the durable fixtures).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { createRunQueue, defineRegistry, type RunQueueSpec, startWorker } from "../../src/queue/index.ts";
import { ScriptedClient, type ScriptStep } from "../../src/testing/index.ts";
import { effectsLog } from "../fixtures/durable/crash-points.ts";
import { shopWorkflow } from "../fixtures/durable/shop.ts";

export { effectsLog };

/** Call at a test file's top level: what the file's tests start is cleaned up after each one. */
export function crashHarness(prefix: string) {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  return {
    cleanups,
    /** A fresh directory, removed after the test. */
    tempDir(): string {
      const dir = mkdtempSync(join(tmpdir(), prefix));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      return dir;
    },
    /** `node --import tsx <fixture> ...args`, killed after the test if it still runs. */
    spawnFixture(fixture: URL, args: readonly string[]): ChildProcess {
      const child = spawn(process.execPath, ["--import", "tsx", fixture.pathname, ...args], {
        stdio: "inherit",
      });
      cleanups.push(() => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill("SIGCONT");
          child.kill("SIGKILL");
        }
      });
      return child;
    },
    /** A worker in this process ("survivor") on the queue `spec` opens: the shop workflow answered by `script`. */
    async startShopWorker(spec: RunQueueSpec, dir: string, script: ScriptStep[]) {
      const queue = await createRunQueue(spec);
      cleanups.push(() => queue.close());
      const runner = new WorkflowRunner({
        client: new ScriptedClient(script),
        contextManager: { maybeCompact: (messages) => messages },
      });
      const worker = startWorker({
        queue,
        registry: defineRegistry({ workflows: [shopWorkflow(dir)], runner }),
        workerId: "survivor",
        pollMs: 50,
      });
      cleanups.push(() => worker.close());
      return { queue };
    },
  };
}

/** Wait until a line of `<dir>/effects.log` passes `test`; fail with the log after `timeoutMs`. */
export async function waitForLine(
  dir: string,
  test: (line: string) => boolean,
  what: string,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!effectsLog(dir).some(test)) {
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; log:\n${effectsLog(dir).join("\n")}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
