/** `forge watch --traces`: an eval run's trace shown as a watch run, and a wrong file named. */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FaultKind } from "../../../eval/sim-model/profiles.ts";
import { EvalTraceError, readEvalTraces, startWatchServer } from "../../../src/watch/index.ts";
import { timelineEvents } from "../../../src/watch/view/index.ts";
import { runInProcess, scripted } from "../../eval/helpers.ts";

describe("eval traces in forge watch", () => {
  it("shows an eval run with its states, step nudge and compaction, and the same timeline", async () => {
    const { trace } = await runInProcess(
      "compaction_chain_p2",
      "reforged",
      scripted(FaultKind.PREMATURE_TERMINAL),
    );
    const dir = mkdtempSync(join(tmpdir(), "forge-watch-traces-"));
    const file = join(dir, "batch.traces.jsonl");
    writeFileSync(file, `${JSON.stringify(trace)}\n`);

    const watch = await startWatchServer({ port: 0, dir: join(dir, "runs"), traces: [file] });
    try {
      const [run] = watch.store.list();
      expect(run).toMatchObject({ name: "compaction_chain_p2 × reforged", source: "eval" });
      expect(run?.finished?.outcome).toBe("done");
      // The trace's own records, the start messages first.
      // (An exchange's fields the viewer does not draw, such as its token source, are left out.)
      expect(trace.exchanges).toMatchObject(run?.trace.exchanges ?? []);
      expect(run?.trace.compactions).toEqual(trace.compactions);
      expect(run?.trace.transitions).toEqual(trace.transitions);
      expect(run?.trace.messages.map((entry) => entry.message)).toEqual([
        ...trace.startMessages,
        ...trace.messages.map((entry) => entry.message),
      ]);
      expect(timelineEvents(trace).some((event) => event.kind === "step_nudge")).toBe(true);
      const page = await (await fetch(`${watch.url}/runs/${run?.runId}`)).text();
      expect(page).toContain('data-kind="step_nudge"');
      expect(page).toContain('data-kind="compaction"');
      expect(page).toContain(
        '<g class="state current final" data-state="done">'.replace(" current final", " final current"),
      );
    } finally {
      await watch.close();
    }
  });

  it("names the file and line of something that is not a trace, such as the rows file", () => {
    const file = join(mkdtempSync(join(tmpdir(), "forge-watch-traces-")), "batch.jsonl");
    writeFileSync(file, `${JSON.stringify({ key: "k", status: "done", accurate: true })}\n`);
    expect(() => readEvalTraces(file)).toThrow(EvalTraceError);
    expect(() => readEvalTraces(file)).toThrow(
      /batch\.jsonl, line 1: not an eval run trace .*not its rows file/,
    );
  });
});
