/**
 * The embedded queue's write cost (`npm run bench:embedded`): per operation, p50/p99 in ms over
 * --writes operations after 50 warm-up ones, in a fresh directory under the OS temp dir:
 * - enqueue in a worker-mode queue (one run file written),
 * - enqueue in a client-mode queue (a temp file linked to its name, as `forge enqueue` does),
 * - saveCheckpoint through a lease (a run file replaced) with a 2 kB checkpoint.
 * Prints a Markdown table with the machine's load average. Option: --writes N (default 500).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { createEmbeddedQueue, type StoredCheckpoint } from "../src/queue/index.ts";

const { values: args } = parseArgs({ options: { writes: { type: "string", default: "500" } } });
const WRITES = Number(args.writes);
const WARM_UP = 50;

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function timed(count: number, operation: (index: number) => Promise<unknown>): Promise<number[]> {
  const samples: number[] = [];
  for (let index = 0; index < count + WARM_UP; index += 1) {
    const start = performance.now();
    await operation(index);
    if (index >= WARM_UP) samples.push(performance.now() - start);
  }
  return samples;
}

const checkpoint: StoredCheckpoint = {
  snapshot: {
    context: {
      messages: Array.from({ length: 12 }, (_, i) => ({ role: "tool", content: "x".repeat(140 + i) })),
    },
  },
  meta: {
    seq: 1,
    workflow: "bench",
    definitionHash: "0",
    machineVersion: 3,
    reason: "tools",
    runId: "r",
    iteration: 1,
  },
};

const rows: [string, number[]][] = [];
const root = mkdtempSync(join(tmpdir(), "forge-bench-embedded-"));
try {
  const worker = await createEmbeddedQueue({ dir: join(root, "worker") });
  rows.push([
    "enqueue, worker mode",
    await timed(WRITES, (i) => worker.enqueue("bench", "m", { runId: `w-${i}` })),
  ]);
  await worker.close();

  const clientDir = join(root, "client");
  const client = await createEmbeddedQueue({ dir: clientDir, mode: "client" });
  rows.push([
    "enqueue, client mode",
    await timed(WRITES, (i) => client.enqueue("bench", "m", { runId: `c-${i}` })),
  ]);
  await client.close();

  const holder = await createEmbeddedQueue({ dir: join(root, "checkpoint") });
  await holder.enqueue("bench", "m", { runId: "r" });
  const lease = await holder.take("bench");
  if (!lease) throw new Error("no lease");
  rows.push([
    `saveCheckpoint, ${JSON.stringify(checkpoint).length} B`,
    await timed(WRITES, () => lease.saveCheckpoint(checkpoint)),
  ]);
  await holder.close();
} finally {
  rmSync(root, { recursive: true, force: true });
}

console.log(`load average ${loadavg()[0]?.toFixed(1)}; ${WRITES} operations after ${WARM_UP} warm-up; ms\n`);
console.log("| operation | p50 | p99 |\n| --- | --- | --- |");
for (const [name, samples] of rows) {
  console.log(`| ${name} | ${percentile(samples, 50).toFixed(3)} | ${percentile(samples, 99).toFixed(3)} |`);
}
