import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readJsonl } from "../../eval/batch/jsonl.ts";
import { runRowSchema } from "../../eval/batch/row.ts";
import { reportEval } from "../../eval/cli/report-eval.ts";
import { runEval } from "../../eval/cli/run-eval.ts";
import { buildReport } from "../../eval/metrics/aggregate.ts";
import { renderMarkdown } from "../../eval/report/markdown.ts";
import { fakeRow } from "./helpers.ts";

const workdir = () => mkdtempSync(join(tmpdir(), "forge-eval-polish-"));

function capturingIo() {
  const io = { out: "", err: "" };
  return {
    io,
    stdout: (text: string) => {
      io.out += text;
    },
    stderr: (text: string) => {
      io.err += text;
    },
  };
}

describe("report polish", () => {
  it("--scenario, --tags and --ablation take names separated by commas as well as spaces", async () => {
    const dir = workdir();
    const out = join(dir, "rows.jsonl");
    await runEval(
      {
        scenario: ["basic_2step,sequential_3step", "error_recovery"],
        ablation: ["reforged,bare"],
        profile: "clean",
        out,
        progress: false,
        report: false,
        workers: 1,
      },
      capturingIo(),
    );
    const rows = readJsonl(out, runRowSchema).rows;
    expect(new Set(rows.map((row) => row.scenario))).toEqual(
      new Set(["basic_2step", "sequential_3step", "error_recovery"]),
    );
    expect(new Set(rows.map((row) => row.configLabel))).toEqual(new Set(["reforged", "bare"]));
    const reported = capturingIo();
    expect(await reportEval([out], { scenario: ["basic_2step,error_recovery"] }, reported)).toBe(4);
  });

  it("an unknown name says how to name several", async () => {
    const out = join(workdir(), "rows.jsonl");
    await expect(runEval({ scenario: ["basic_2step;sequential_3step"], out }, capturingIo())).rejects.toThrow(
      "Name several separated by commas or spaces: --scenario basic_2step,sequential_3step",
    );
    await expect(runEval({ ablation: ["reforged bare"], out }, capturingIo())).rejects.toThrow(
      "Name several separated by commas or spaces: --ablation reforged,no_rescue",
    );
  });

  it("a context overflow is its own outcome, not an error, and every report prints the presets' settings", async () => {
    const dir = workdir();
    const out = join(dir, "rows.jsonl");
    const markdown = join(dir, "report.md");
    const captured = capturingIo();
    await runEval(
      {
        scenario: ["phase2_compaction,compaction_stress"],
        ablation: ["reforged,no_compact"],
        profile: "clean",
        out,
        markdown,
        progress: false,
        workers: 1,
      },
      captured,
    );
    const report = buildReport(readJsonl(out, runRowSchema).rows);
    const noCompact = report.groups.find((group) => group.configLabel === "no_compact");
    expect(noCompact?.metrics).toMatchObject({ runs: 2, overflows: 2, errors: 0 });
    expect(report.groups.find((group) => group.configLabel === "reforged")?.metrics).toMatchObject({
      overflows: 0,
      errors: 0,
      correct: 2,
    });
    expect(captured.io.err).toContain("(2 context overflows, 0 backend errors, 0 skipped)");
    const presets = [
      "reforged: rescue on, retries 3, step enforcement on, tool errors 2, compaction tiered",
      "no_compact: rescue on, retries 3, step enforcement on, tool errors 2, compaction none",
    ];
    for (const line of presets) {
      expect(captured.io.out).toContain(`  ${line}`);
      expect(readFileSync(markdown, "utf8")).toContain(`- ${line}`);
    }
    expect(captured.io.out).toMatch(/no_compact \(simulated\) +2 +0% \[0–66\] +0% +2 +0 /);
  });

  it("with several models, each config is compared with its own model's baseline and the header names every target", () => {
    const rows = [0, 1, 2, 3].flatMap((run) => [
      fakeRow("reforged", "basic_2step", run, true),
      fakeRow("bare", "basic_2step", run, run < 2),
      fakeRow("reforged", "basic_2step", run, run < 3, {
        backend: "openai-compatible",
        model: "m2",
        simulated: false,
      }),
      fakeRow("bare", "basic_2step", run, false, {
        backend: "openai-compatible",
        model: "m2",
        simulated: false,
      }),
    ]);
    const report = buildReport(rows);
    const deltas = Object.fromEntries(report.comparisons.map((comparison) => [comparison.group, comparison]));
    expect(Object.keys(deltas).sort()).toEqual(["m2 bare", "sim/mixed bare"]);
    expect(deltas["sim/mixed bare"]).toMatchObject({ baseline: "sim/mixed reforged", pairs: 4, delta: -0.5 });
    expect(deltas["m2 bare"]).toMatchObject({ baseline: "m2 reforged", pairs: 4, delta: -0.75 });
    const markdown = renderMarkdown(report);
    expect(markdown).toContain(
      "Targets: `sim-model` `sim/mixed` (profile `mixed`) — **simulated**; `openai-compatible` `m2`",
    );
    expect(markdown).toContain("Ablation deltas vs each model's baseline");
  });
});
