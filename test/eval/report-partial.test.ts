import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readJsonl } from "../../eval/batch/jsonl.ts";
import { planPathFor } from "../../eval/batch/plan.ts";
import { runRowSchema } from "../../eval/batch/row.ts";
import { batchConfigSchema, runBatchConfig } from "../../eval/cli/batch-eval.ts";
import type { ProgressReporter } from "../../eval/cli/progress.ts";
import { reportEval } from "../../eval/cli/report-eval.ts";

const quiet: ProgressReporter = { start() {}, update() {}, stop() {} };

function capture() {
  const out: string[] = [];
  return { io: { stdout: (text: string) => out.push(text), stderr: () => {} }, text: () => out.join("") };
}

const configFor = (out: string) =>
  batchConfigSchema.parse({
    out,
    runs: 1,
    scenarios: ["basic_2step", "sequential_3step"],
    ablation: ["reforged", "bare"],
    targets: [
      { backend: "sim-model", profile: "clean" },
      { backend: "sim-model", profile: "none" },
    ],
  });

describe("reports of a batch that is still running", () => {
  it("report a finished batch as before, refuse a file cut short without --include-partial, and show the rows so far with each target's and config's progress with it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-partial-"));
    const out = join(dir, "rows.jsonl");
    const config = configFor(out);
    await runBatchConfig(config, { stdout: () => {}, stderr: () => {}, progress: quiet }, {});
    expect(readJsonl(out, runRowSchema).rows).toHaveLength(8);
    const finished = capture();
    expect(await reportEval([out], {}, finished.io)).toBe(8);
    expect(finished.text()).not.toContain("PARTIAL");

    // The batch as a reader sees it mid-way: 3 rows of the first target and half of the 4th line.
    const lines = readFileSync(out, "utf8").split("\n");
    const first = lines.filter((line) => line.includes('"model":"sim/clean"'));
    const cut = join(dir, "cut.jsonl");
    writeFileSync(cut, `${first.slice(0, 3).join("\n")}\n${first[3]?.slice(0, 200)}`);
    const plan = readFileSync(planPathFor(out), "utf8").split("\n");
    // Only the batch line and the first target's plan: the second target has not started.
    writeFileSync(planPathFor(cut), `${plan.slice(0, 2).join("\n")}\n`);

    await expect(reportEval([cut], {}, capture().io)).rejects.toThrow(
      /cut\.jsonl is an unfinished batch \(3 of 8 planned runs done, 1 target\(s\) not started\): pass --include-partial/,
    );

    const partial = capture();
    const markdown = join(dir, "partial.md");
    expect(await reportEval([cut], { includePartial: true, markdown }, partial.io)).toBe(3);
    const text = partial.text();
    expect(text).toContain("PARTIAL — ");
    expect(text).toContain("partial batch: 3/8 planned runs done\n  sim-model sim/clean: 3/4\n");
    const kept = readJsonl(cut, runRowSchema).rows;
    const of = (label: string) => kept.filter((row) => row.configLabel === label).length;
    expect(text).toContain(`    reforged: ${of("reforged")}/2\n    bare: ${of("bare")}/2\n`);
    expect(text).toContain("1 target(s) not started yet");
    const written = readFileSync(markdown, "utf8");
    expect(written).toMatch(/^## Eval report \(partial: 3\/8 runs\)/);
    expect(written).toContain(`| sim-model sim/clean | bare | ${of("bare")}/2 |`);
  });

  it("reports an interrupted batch (its second target never started) as partial from the batch command's own report", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-partial-"));
    const out = join(dir, "rows.jsonl");
    const controller = new AbortController();
    const interrupting: ProgressReporter = { start() {}, update: () => controller.abort(), stop() {} };
    await runBatchConfig(
      configFor(out),
      { stdout: () => {}, stderr: () => {}, progress: interrupting },
      { signal: controller.signal },
    );
    const rows = readJsonl(out, runRowSchema).rows.length;
    expect(rows).toBeGreaterThan(0);
    expect(rows).toBeLessThanOrEqual(4); // the runs in flight finish; the second target never starts
    await expect(reportEval([out], {}, capture().io)).rejects.toThrow(/unfinished batch/);
    const partial = capture();
    await reportEval([out], { includePartial: true }, partial.io);
    expect(partial.text()).toContain(`partial batch: ${rows}/8 planned runs done`);

    // Resumed to the end: the plan is met and the report is no longer partial.
    await runBatchConfig(configFor(out), { stdout: () => {}, stderr: () => {}, progress: quiet }, {});
    const done = capture();
    expect(await reportEval([out], {}, done.io)).toBe(8);
    expect(done.text()).not.toContain("PARTIAL");
  });
});
