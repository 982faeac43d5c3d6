/**
 * The embedded queue's prune: deleting finished run files under the directory's lock, and the
 * request files (`prune/<id>.json`, answered by `prune/<id>.done`) through which a client asks the
 * worker that holds the directory, or prunes itself when none does.
 */
import { randomUUID } from "node:crypto";
import { existsSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import {
  assertPruneOptions,
  type FinishedStatus,
  isPrunable,
  QueueFencedError,
  RunQueueStateError,
} from "../run-queue.ts";
import { type StoredRun, syncDirectory, writeFileDurably } from "./files.ts";
import { DirectoryLock } from "./lock.ts";

/** A client's prune request, as a file in `prune/`. */
export interface PruneRequest {
  olderThanMs: number;
  status: FinishedStatus[];
}
type PruneAnswer = { removed: number } | { error: string };

/**
 * Delete the run files of `runs` (the queue's, updated) that `request` names, in a process that
 * holds the directory (`lock`, checked before each delete). A delete is one unlink: a reader racing
 * it finds the whole file or none (ENOENT, which every read expects).
 */
export function pruneRuns(
  queueDir: string,
  runs: Map<string, StoredRun>,
  request: PruneRequest,
  lock: DirectoryLock,
): number {
  const runsDir = join(queueDir, "runs");
  const status = new Set(request.status);
  const cutoff = Date.now() - request.olderThanMs;
  let removed = 0;
  for (const run of [...runs.values()]) {
    if (!isPrunable(run, status, cutoff)) continue;
    // A retry asked for and not yet carried out wins: the run is about to wait again.
    if (existsSync(join(queueDir, "retry", run.runId))) continue;
    lock.assertHeld(run.runId);
    rmSync(join(runsDir, `${run.runId}.json`), { force: true });
    // A cancel left for the pruned (finished) run must not reach a new run of the same id.
    rmSync(join(queueDir, "cancel", run.runId), { force: true });
    runs.delete(run.runId);
    removed += 1;
  }
  if (removed > 0) syncDirectory(runsDir);
  return removed;
}

/**
 * A worker carries out the prune requests clients left as files (`prune`), and answers each beside
 * it. An entry that is not a file is left alone and told to `onStray`.
 */
export function answerPruneRequests(
  queueDir: string,
  prune: (request: PruneRequest) => number,
  onStray: (name: string, reason: string) => void,
): void {
  const dir = join(queueDir, "prune");
  for (const name of readdirSync(dir, { withFileTypes: true })
    .filter((entry) => {
      if (entry.isFile()) return true;
      onStray(entry.name, "not a file");
      return false;
    })
    .map((entry) => entry.name)) {
    if (!name.endsWith(".json") || name.startsWith(".")) continue;
    const id = name.slice(0, -".json".length);
    let answer: PruneAnswer;
    try {
      const { olderThanMs, status } = assertPruneOptions(JSON.parse(readFileSync(join(dir, name), "utf8")));
      answer = { removed: prune({ olderThanMs, status: [...status] }) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
      if (error instanceof QueueFencedError) throw error;
      answer = { error: (error as Error).message };
    }
    writeFileDurably(join(dir, `${id}.done`), JSON.stringify(answer));
    rmSync(join(dir, name), { force: true });
  }
}

/**
 * A client's prune: leave a request for the worker that holds the directory and wait for its
 * answer (at its next take or checkpoint); when no worker holds it, take the lock and `pruneHere`.
 * `assertOpen` throws once the client's queue closed.
 */
export async function askToPrune(
  queueDir: string,
  request: PruneRequest,
  options: { assertOpen(): void; pruneHere(lock: DirectoryLock): number },
): Promise<number> {
  const pruneDir = join(queueDir, "prune");
  const id = randomUUID();
  const requestPath = join(pruneDir, `${id}.json`);
  const answerPath = join(pruneDir, `${id}.done`);
  writeFileDurably(requestPath, JSON.stringify(request));
  try {
    for (;;) {
      options.assertOpen();
      if (existsSync(answerPath)) {
        const answer = JSON.parse(readFileSync(answerPath, "utf8")) as PruneAnswer;
        rmSync(answerPath, { force: true });
        if ("error" in answer) throw new RunQueueStateError(`The worker could not prune: ${answer.error}`);
        return answer.removed;
      }
      if (!(await DirectoryLock.isHeld(queueDir))) {
        const removed = await pruneHoldingLock(queueDir, requestPath, options.pruneHere);
        if (removed !== undefined) return removed;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    // Given up (the queue closed): a request nobody waits for any more is withdrawn, and an
    // answer that came meanwhile is not left behind.
    rmSync(requestPath, { force: true });
    rmSync(answerPath, { force: true });
  }
}

/** Prune under the directory's lock when it is free and the request still unclaimed; else undefined. */
async function pruneHoldingLock(
  queueDir: string,
  requestPath: string,
  pruneHere: (lock: DirectoryLock) => number,
): Promise<number | undefined> {
  const lock = new DirectoryLock(queueDir);
  try {
    await lock.acquire();
  } catch {
    return undefined; // a worker took the directory meanwhile: it answers
  }
  try {
    // Claimed by taking it away: a worker that read it first has answered or will.
    const claimed = `${requestPath}.mine`;
    try {
      renameSync(requestPath, claimed);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
    rmSync(claimed, { force: true });
    return pruneHere(lock);
  } finally {
    await lock.release();
  }
}
