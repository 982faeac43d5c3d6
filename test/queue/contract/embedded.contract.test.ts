/**
 * The `RunQueue` contract on the embedded queue: each case in a directory of its own under one
 * temporary directory; a producer is a client-mode queue on the same directory, and a crash is the
 * queue closed without settling its leases, its directory opened again by the next worker.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { createEmbeddedQueue, type EmbeddedQueueOptions } from "../../../src/queue/index.ts";
import { type ContractQueue, describeRunQueueContract } from "./run-queue-contract.ts";

const root = mkdtempSync(join(tmpdir(), "forge-contract-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The directory each queue was opened on. */
const dirs = new WeakMap<ContractQueue, string>();

async function openOn(dir: string, mode: EmbeddedQueueOptions["mode"] = "worker"): Promise<ContractQueue> {
  const queue = await createEmbeddedQueue({ dir, mode });
  dirs.set(queue, dir);
  return queue;
}

function dirOf(queue: ContractQueue): string {
  const dir = dirs.get(queue);
  if (dir === undefined) throw new Error("not a queue this engine opened");
  return dir;
}

describeRunQueueContract("embedded", {
  open: () => openOn(mkdtempSync(join(root, "queue-"))),
  openProducer: (queue) => openOn(dirOf(queue), "client"),
  crash: async (queue) => {
    // Closed with its leases unsettled, as a killed process leaves its runs: its lock released, the
    // next worker opens the directory at once (a killed process's lock goes stale after 10 s).
    await queue.close();
    return openOn(dirOf(queue));
  },
});
