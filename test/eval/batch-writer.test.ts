import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { claimsDirFor, openBatchWriter } from "../../eval/batch/batch-writer.ts";
import { readJsonl } from "../../eval/batch/jsonl.ts";
import { runRowSchema } from "../../eval/batch/row.ts";
import { readTraces } from "../../eval/report/write-report.ts";

const workdir = () => mkdtempSync(join(tmpdir(), "forge-eval-writer-"));
const lines = (file: string) =>
  existsSync(file)
    ? readFileSync(file, "utf8")
        .split("\n")
        .filter((line) => line !== "")
    : [];

describe("batch writer", () => {
  it("splits the keys between two writers of one file and never appends a key twice", async () => {
    const out = join(workdir(), "rows.jsonl");
    const keys = ["a", "b", "c", "d"];
    const first = await openBatchWriter(out, null);
    const second = await openBatchWriter(out, null);
    expect(await first.claimNext(keys)).toEqual({ kind: "claimed", index: 0 });
    expect(await second.claimNext(keys)).toEqual({ kind: "claimed", index: 1 });
    expect(await first.claimNext(keys)).toEqual({ kind: "claimed", index: 2 });
    expect(await second.claimNext(keys)).toEqual({ kind: "claimed", index: 3 });
    // All claimed: the second waits for the first's keys, the first for the second's.
    expect(await second.claimNext(keys)).toEqual({ kind: "wait" });

    expect(await first.append("a", { key: "a", by: 1 }, null)).toBe(true);
    // Ran twice (a claim taken over from a writer that stalled): the row is not written again.
    expect(await second.append("a", { key: "a", by: 2 }, null)).toBe(false);
    expect(await second.append("b", { key: "b", by: 2 }, null)).toBe(true);

    // The first stops with "c" claimed and not done: its claim no longer counts.
    await first.close();
    expect(await second.claimNext(keys)).toEqual({ kind: "claimed", index: 2 });
    expect(await second.append("c", { key: "c", by: 2 }, null)).toBe(true);
    expect(await second.append("d", { key: "d", by: 2 }, null)).toBe(true);
    expect(await second.claimNext(keys)).toEqual({ kind: "done" });
    await second.close();
    expect(lines(out).map((line) => JSON.parse(line))).toEqual([
      { key: "a", by: 1 },
      { key: "b", by: 2 },
      { key: "c", by: 2 },
      { key: "d", by: 2 },
    ]);
  });

  it("appends a row and claims the next key in one call, and says when the row was there already", async () => {
    const out = join(workdir(), "rows.jsonl");
    const keys = ["a", "b"];
    const writer = await openBatchWriter(out, null);
    const other = await openBatchWriter(out, null);
    expect(await writer.claimNext(keys)).toEqual({ kind: "claimed", index: 0 });
    expect(await writer.appendAndClaimNext("a", { key: "a" }, null, keys)).toEqual({
      appended: true,
      claim: { kind: "claimed", index: 1 },
    });
    expect(await other.append("b", { key: "b", by: "other" }, null)).toBe(true);
    expect(await writer.appendAndClaimNext("b", { key: "b" }, null, keys)).toEqual({
      appended: false,
      claim: { kind: "done" },
    });
    await Promise.all([writer.close(), other.close()]);
    expect(lines(out)).toEqual(['{"key":"a"}', '{"key":"b","by":"other"}']);
  });

  it("writes the trace before its row and cuts a line a killed writer left half-written", async () => {
    const dir = workdir();
    const out = join(dir, "rows.jsonl");
    const traces = join(dir, "rows.traces.jsonl");
    const writer = await openBatchWriter(out, traces);
    expect(await writer.claimNext(["a", "b"])).toEqual({ kind: "claimed", index: 0 });
    expect(await writer.append("a", { key: "a" }, { key: "a", trace: true })).toBe(true);
    appendFileSync(out, '{"key":"b","torn');
    appendFileSync(traces, '{"key":"b","tor');
    expect(await writer.claimNext(["a", "b"])).toEqual({ kind: "claimed", index: 1 });
    expect(await writer.append("b", { key: "b" }, { key: "b", trace: true })).toBe(true);
    await writer.close();
    expect(lines(out)).toEqual(['{"key":"a"}', '{"key":"b"}']);
    expect(lines(traces)).toEqual(['{"key":"a","trace":true}', '{"key":"b","trace":true}']);
  });
});

describe("two evals with --resume on one file", () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
  });

  const RUNS = 100;
  const PLANNED = 2 * 2 * RUNS;
  const spawnEval = (out: string) => {
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "eval/cli/main.ts",
        "eval",
        "--scenario",
        "basic_2step",
        "relevance_detection",
        "--ablation",
        "reforged",
        "bare",
        "--runs",
        String(RUNS),
        "--profile",
        "mixed",
        "--out",
        out,
        "--resume",
        "--no-progress",
        "--no-report",
        "--workers",
        "1",
        "--concurrency",
        "2",
        "--delay-ms",
        "20",
      ],
      { cwd: process.cwd(), stdio: ["ignore", "pipe", "pipe"] },
    );
    children.push(child);
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<{ code: number | null; stderr: string }>((resolve) =>
      child.once("exit", (code) => resolve({ code, stderr })),
    );
    const started = async () => {
      while (!/already in/.test(stderr)) {
        if (child.exitCode !== null) throw new Error(`eval exited early: ${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    return { child, exited, started };
  };
  const waitForRows = async (out: string, count: number) => {
    const started = Date.now();
    while (lines(out).length < count) {
      if (Date.now() - started > 60_000) throw new Error(`${out} did not reach ${count} rows in 60 s`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const written = (stderr: string) => Number(/wrote (\d+) rows/.exec(stderr)?.[1] ?? Number.NaN);
  const expectEveryRunOnce = (out: string) => {
    const { rows, problems } = readJsonl(out, runRowSchema);
    expect(problems).toEqual([]);
    expect(rows).toHaveLength(PLANNED);
    expect(new Set(rows.map((row) => row.key)).size).toBe(PLANNED);
    const traces = readTraces(out.replace(/\.jsonl$/, ".traces.jsonl"));
    for (const row of rows) expect(traces.has(row.key), row.key).toBe(true);
  };

  it("split the runs: every run once, each process writing only its own", async () => {
    const out = join(workdir(), "rows.jsonl");
    const first = spawnEval(out);
    await waitForRows(out, 5);
    const second = spawnEval(out);
    const [a, b] = await Promise.all([first.exited, second.exited]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    expectEveryRunOnce(out);
    // No run made twice: the rows each says it wrote add up to the batch.
    expect(written(a.stderr) + written(b.stderr)).toBe(PLANNED);
    expect(written(b.stderr)).toBeGreaterThan(0);
    expect(a.stderr).toMatch(/more by another eval writing the same file/);
  }, 180_000);

  it("the survivor redoes the runs of one killed mid-batch (kill -9), without a third --resume", async () => {
    const out = join(workdir(), "rows.jsonl");
    const first = spawnEval(out);
    await waitForRows(out, 5);
    const second = spawnEval(out);
    // Both are running and claiming when the first dies, with runs of its own under way.
    await second.started();
    await waitForRows(out, lines(out).length + 10);
    first.child.kill("SIGKILL");
    const b = await second.exited;
    expect(b.code, b.stderr).toBe(0);
    expectEveryRunOnce(out);
    // The runs the killed one had under way were claimed again, by the survivor.
    const owners = new Map<string, Set<string>>();
    for (const line of lines(join(claimsDirFor(out), "claims.jsonl"))) {
      const claim = JSON.parse(line) as { key: string; owner: string };
      owners.set(claim.key, (owners.get(claim.key) ?? new Set()).add(claim.owner));
    }
    expect([...owners.values()].filter((claimants) => claimants.size === 2).length).toBeGreaterThan(0);
  }, 180_000);
});
