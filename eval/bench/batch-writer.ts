/**
 * What the locked batch writer costs per run: `--runs` keys claimed and appended (a 1.5 KB row and
 * a 10 KB trace each, about a sim-model run's) through `openBatchWriter`, against the same rows and
 * traces appended by the plain `openJsonlAppender` it replaced, in one process on a fresh folder.
 *
 * Usage: tsx eval/bench/batch-writer.ts [--runs 1000] [--rounds 3]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openBatchWriter } from "../batch/batch-writer.ts";
import { openJsonlAppender } from "../batch/jsonl.ts";

const args = process.argv.slice(2);
const option = (name: string, fallback: number) => {
  const index = args.indexOf(`--${name}`);
  return index >= 0 ? Number(args[index + 1]) : fallback;
};
const runs = option("runs", 1000);
const rounds = option("rounds", 3);
const keys = Array.from(
  { length: runs },
  (_, index) => `sim-model|sim/mixed|reforged|scenario|run${index}|seed0`,
);
const rowOf = (key: string) => ({ key, pad: "x".repeat(1500) });
const traceOf = (key: string) => ({ key, pad: "y".repeat(10_000) });

async function locked(dir: string): Promise<number> {
  const started = performance.now();
  const writer = await openBatchWriter(join(dir, "rows.jsonl"), join(dir, "rows.traces.jsonl"));
  let claim = await writer.claimNext(keys);
  while (claim.kind === "claimed") {
    const key = keys[claim.index] as string;
    claim = (await writer.appendAndClaimNext(key, rowOf(key), traceOf(key), keys)).claim;
  }
  await writer.close();
  return performance.now() - started;
}

function plain(dir: string): number {
  const started = performance.now();
  const rows = openJsonlAppender(join(dir, "rows.jsonl"));
  const traces = openJsonlAppender(join(dir, "rows.traces.jsonl"));
  for (const key of keys) {
    traces.append(traceOf(key));
    rows.append(rowOf(key));
  }
  rows.close();
  traces.close();
  return performance.now() - started;
}

for (let round = 1; round <= rounds; round += 1) {
  const results: string[] = [];
  for (const [name, write] of [
    ["plain appender", plain],
    ["locked writer", locked],
  ] as const) {
    const dir = mkdtempSync(join(tmpdir(), "forge-writer-bench-"));
    const ms = await write(dir);
    rmSync(dir, { recursive: true, force: true });
    results.push(`${name} ${(ms / runs).toFixed(3)} ms/run`);
  }
  console.log(`round ${round}, ${runs} runs: ${results.join(", ")}`);
}
