import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readJsonl } from "../../eval/batch/jsonl.ts";
import { runRowSchema } from "../../eval/batch/row.ts";
import { runEval } from "../../eval/cli/run-eval.ts";
import { runForge } from "../../eval/run/forge-run.ts";
import type { ToolCall } from "../../src/core/types.ts";
import { ChunkType, type LLMClient, type LLMResponse } from "../../src/core/types.ts";
import { preset, runInProcess, scenario } from "./helpers.ts";

/** A client that plays `turns` in order and fails on an unexpected extra call. */
function scriptedClient(turns: readonly (readonly ToolCall[])[]): LLMClient & { calls: number } {
  const client = {
    apiFormat: "openai" as const,
    calls: 0,
    async send(): Promise<LLMResponse> {
      const turn = turns[client.calls];
      client.calls += 1;
      if (!turn) throw new Error(`unexpected call ${client.calls}: the script has ${turns.length}`);
      return [...turn];
    },
    async *sendStream() {
      yield { type: ChunkType.FINAL, response: await client.send() };
    },
    async getContextLength() {
      return null;
    },
  };
  return client;
}

const call = (tool: string, args: Record<string, unknown>): ToolCall[] => [{ tool, args }];

async function runScript(id: string, config: string, turns: readonly (readonly ToolCall[])[]) {
  const client = scriptedClient(turns);
  const { measurement } = await runForge({
    key: `${id}|${config}|scripted`,
    scenario: scenario(id),
    config: preset(config),
    client,
    runId: `${id}-scripted`,
  });
  return { measurement, calls: client.calls };
}

const NEW_IDS = [
  "basic_2step_stateful_tre",
  "phase2_compaction_stateful",
  "supplier_deep_dive",
  "data_gap_recovery_extended",
  "data_gap_recovery_extended_stateful",
  "inconsistent_api_recovery_stateful",
];

describe("the seed-listed scenario variants", () => {
  it("exist with the seeds' tags and ideal counts", () => {
    const tags = Object.fromEntries(NEW_IDS.map((id) => [id, [...scenario(id).tags].sort()]));
    expect(tags).toEqual({
      basic_2step_stateful_tre: ["plumbing", "stateful"],
      phase2_compaction_stateful: ["compaction", "reasoning", "stateful"],
      supplier_deep_dive: ["compaction", "reasoning", "stateful"],
      data_gap_recovery_extended: ["model_quality", "reasoning"],
      data_gap_recovery_extended_stateful: ["model_quality", "reasoning", "stateful"],
      inconsistent_api_recovery_stateful: ["reasoning", "stateful"],
    });
    expect(NEW_IDS.map((id) => scenario(id).idealIterations)).toEqual([2, 7, 6, 4, 5, 4]);
  });

  it.each(NEW_IDS)(
    "%s: the reference solution passes under reforged in its ideal number of calls",
    async (id) => {
      const { measurement } = await runInProcess(id, "reforged");
      expect(measurement.accurate, measurement.errorMessage ?? measurement.stateProblem ?? "").toBe(true);
      expect(measurement.iterations).toBe(scenario(id).idealIterations);
    },
  );

  it("basic_2step_stateful_tre: an unresolved title is fed back without counting as a tool error", async () => {
    const turns = [
      call("find_note", { title: "standup note" }),
      call("find_note", { title: "Standup" }),
      call("share_note", { note_id: "N-7", email: "kai@example.com" }),
    ];
    // no_recovery ends a run on its first tool error; a ToolResolutionError is not one.
    const { measurement, calls } = await runScript("basic_2step_stateful_tre", "no_recovery", turns);
    expect(calls).toBe(3);
    expect(measurement).toMatchObject({ status: "done", accurate: true, wastedCalls: 1 });
  });

  it("the compaction variants compact under reforged and overflow the sim-model's window without it", async () => {
    expect((await runInProcess("phase2_compaction_stateful", "reforged")).measurement.maxPhase).toBe(2);
    expect((await runInProcess("supplier_deep_dive", "reforged")).measurement.compactions).toBeGreaterThan(0);
    const out = join(mkdtempSync(join(tmpdir(), "forge-eval-variants-")), "rows.jsonl");
    await runEval(
      {
        scenario: ["phase2_compaction_stateful,supplier_deep_dive"],
        ablation: ["reforged,no_compact"],
        profile: "clean",
        out,
        progress: false,
        report: false,
        workers: 1,
      },
      { stdout: () => {}, stderr: () => {} },
    );
    const rows = readJsonl(out, runRowSchema).rows;
    expect(rows).toHaveLength(4);
    for (const row of rows) {
      if (row.configLabel === "reforged") expect(row.accurate, row.key).toBe(true);
      else expect(row.failureKind, row.key).toBe("context_exceeded");
    }
  });

  it("data_gap_recovery_extended_stateful: a second delay credit breaks the state check", async () => {
    const reference = scenario("data_gap_recovery_extended_stateful").reference.map((step) =>
      call(step.tool, step.args),
    );
    const duplicated = [...reference.slice(0, 4), reference[3] as ToolCall[], ...reference.slice(4)];
    const { measurement } = await runScript("data_gap_recovery_extended_stateful", "reforged", duplicated);
    expect(measurement.completed).toBe(true);
    expect(measurement.stateProblem).toBe("credits were [ZX-5120:10, ZX-5120:10]");
    expect(measurement.accurate).toBe(false);
  });

  it("inconsistent_api_recovery_stateful: a credit in cents is refused and recovered from under reforged, ends the run under no_recovery", async () => {
    const reference = scenario("inconsistent_api_recovery_stateful").reference.map((step) =>
      call(step.tool, step.args),
    );
    const inCents = call("issue_credit", {
      account_ref: "acct_7710_us",
      amount_usd: 12900,
      reason: "double charge",
    });
    const turns = [...reference.slice(0, 2), inCents, ...reference.slice(2)];
    const recovered = await runScript("inconsistent_api_recovery_stateful", "reforged", turns);
    expect(recovered.measurement).toMatchObject({ status: "done", accurate: true, toolErrors: 1 });
    const ended = await runScript("inconsistent_api_recovery_stateful", "no_recovery", turns.slice(0, 3));
    expect(ended.measurement).toMatchObject({ status: "failed", failureKind: "tool_execution" });
  });
});
