import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runEval } from "../../eval/cli/run-eval.ts";
import { buildReport } from "../../eval/metrics/aggregate.ts";
import { renderMarkdown } from "../../eval/report/markdown.ts";
import { CHROMIUM_PATH, chromiumAvailable, renderPages } from "../../eval/report/screenshot.ts";
import { renderTerminalReport } from "../../eval/report/table.ts";
import { renderTimeline, timelineEvents } from "../../eval/report/timeline.ts";
import { loadRows, writeHtmlReport } from "../../eval/report/write-report.ts";
import { FaultKind } from "../../eval/sim-model/profiles.ts";
import { fakeRow, runInProcess, scripted } from "./helpers.ts";

const quietIo = { stdout: () => {}, stderr: () => {} };

describe("text reports", () => {
  it("label simulated rows, show intervals, deltas with McNemar p, failure kinds and the scenario matrix", () => {
    const rows = [
      ...Array.from({ length: 6 }, (_, run) => fakeRow("reforged", "basic_2step", run, true)),
      ...Array.from({ length: 6 }, (_, run) => fakeRow("bare", "basic_2step", run, run < 2)),
    ];
    const report = buildReport(rows);
    const table = renderTerminalReport(report);
    expect(table).toMatch(/reforged \(simulated\)\s+6\s+100% \[61–100\]/);
    expect(table).toMatch(/bare \(simulated\).*−67 pp p=0\.13/);
    const markdown = renderMarkdown(report, { command: "npm run eval -- --runs 6" });
    expect(markdown).toContain("```sh\nnpm run eval -- --runs 6\n```");
    expect(markdown).toContain("**simulated**");
    expect(markdown).toMatch(/\| bare \| 6 \| −67 pp \| 4 \| 0 \| p=0\.13 \|/);
    expect(markdown).toMatch(/\| config \| retries_exhausted \|/);
  });

  it("a timeline holds the messages, nudges, compactions, LLM calls and state transitions of a run", async () => {
    const { trace } = await runInProcess(
      "compaction_chain_p2",
      "reforged",
      scripted(FaultKind.PREMATURE_TERMINAL),
    );
    const kinds = new Set(timelineEvents(trace).map((event) => event.kind));
    for (const kind of [
      "state",
      "llm",
      "tool_call",
      "tool_result",
      "step_nudge",
      "compaction",
      "reasoning",
    ]) {
      expect(kinds, kind).toContain(kind);
    }
    const html = renderTimeline(trace, null);
    expect(html).toContain("compaction phase 2");
    expect(html).toContain("[StepEnforcementError]");
    expect(html).toContain("state: execute");
  });
});

describe("the HTML dashboard in headless Chromium", () => {
  it("renders offline with its charts and no console errors, and so do its run timelines", async () => {
    // `npm test`'s pretest step installs Chromium when root; a missing browser fails here.
    expect(
      chromiumAvailable(),
      `${CHROMIUM_PATH} is not installed. Install it with: apt-get update && apt-get install -y chromium`,
    ).toBe(true);
    const dir = mkdtempSync(join(tmpdir(), "forge-dash-"));
    const out = join(dir, "rows.jsonl");
    await runEval(
      {
        runs: 1,
        scenario: ["compaction_chain_p3", "tool_selection_stateful"],
        ablation: ["reforged", "bare", "no_compact"],
        peer: true,
        profile: "hostile",
        out,
        progress: false,
        report: false,
        workers: 1,
      },
      quietIo,
    );
    const report = buildReport(loadRows([out]).rows);
    const written = writeHtmlReport(report, {
      outDir: join(dir, "html"),
      tracesFiles: [out.replace(/\.jsonl$/, ".traces.jsonl")],
    });
    expect(written.timelines).toBe(8);
    const html = readFileSync(written.dashboard, "utf8");
    expect(html).not.toMatch(/<script|https?:\/\/(?!www\.w3\.org)/);
    const timelines = readdirSync(join(dir, "html", "runs"));
    const [dashboard, timeline] = await renderPages([
      written.dashboard,
      join(dir, "html", "runs", timelines[0] as string),
    ]);
    expect(dashboard?.consoleErrors).toEqual([]);
    expect(dashboard?.failedRequests).toEqual([]);
    expect(dashboard?.charts).toBe(3);
    expect(timeline?.consoleErrors).toEqual([]);
    expect(timeline?.charts).toBe(1);
  }, 60_000);
});
