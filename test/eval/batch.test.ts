import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ABLATION_PRESETS, AI_SDK_CONFIG } from "../../eval/ablation.ts";
import { startBackend } from "../../eval/backends/registry.ts";
import { planTasks, runBatch } from "../../eval/batch/batch.ts";
import { readJsonl } from "../../eval/batch/jsonl.ts";
import { currentVersions, type RunRow, runRowSchema } from "../../eval/batch/row.ts";
import { findTrace, replayTrace } from "../../eval/cli/replay-eval.ts";
import { runEval } from "../../eval/cli/run-eval.ts";
import { readTraces } from "../../eval/report/write-report.ts";
import { runPeer } from "../../eval/run/peer-run.ts";
import { FAULT_PROFILES, FaultKind } from "../../eval/sim-model/profiles.ts";
import { startSimModel } from "../../eval/sim-model/server.ts";
import { planTurn } from "../../eval/sim-model/turn.ts";
import { simModelName } from "../../eval/sim-model/wire.ts";
import { scenario } from "./helpers.ts";

const quietIo = { stdout: () => {}, stderr: () => {} };
const workdir = () => mkdtempSync(join(tmpdir(), "forge-eval-"));
const rowsOf = (file: string): RunRow[] => readJsonl(file, runRowSchema).rows;

describe("batch runs", () => {
  it("records a backend that dies mid-batch in its rows and goes on", async () => {
    const sim = await startSimModel({ profile: "clean" });
    const session = await startBackend("sim-model", { profile: "clean", baseUrl: sim.url });
    const identity = { backend: session.backend, model: session.model, baseSeed: 0, stream: false };
    const tasks = planTasks(identity, [scenario("basic_2step")], [ABLATION_PRESETS.reforged!], 6);
    const out = join(workdir(), "rows.jsonl");
    const summary = await runBatch({
      tasks,
      session,
      identity,
      versions: currentVersions(),
      batchId: "b",
      out,
      tracesOut: null,
      concurrency: 1,
      onRowWritten: (_row, finished) => {
        if (finished === 2) void sim.close();
      },
    });
    const rows = rowsOf(out);
    expect(summary).toMatchObject({ planned: 6, written: 6, errors: 4 });
    expect(rows.map((row) => row.status)).toEqual(["done", "done", "error", "error", "error", "error"]);
    expect(rows[2]).toMatchObject({
      failureKind: "backend_error",
      errorName: "BackendError",
      completed: false,
    });
    expect(rows[2]?.errorMessage).toBeTruthy();
  });

  it("writes every row with config, versions, seed and profile, and traces that replay exactly", async () => {
    const dir = workdir();
    const out = join(dir, "rows.jsonl");
    await runEval(
      {
        runs: 2,
        scenario: ["sequential_3step_stateful", "compaction_chain_resume", "tool_selection"],
        ablation: ["reforged", "no_steps"],
        profile: "hostile",
        out,
        progress: false,
        report: false,
        workers: 1,
      },
      quietIo,
    );
    const rows = rowsOf(out);
    expect(rows).toHaveLength(12);
    expect(rows[0]).toMatchObject({
      backend: "sim-model",
      model: "sim/hostile",
      simulated: true,
      profile: "hostile",
      versions: { forgeGuardrails: "0.1.0", node: process.version },
      trace: "rows.traces.jsonl",
    });
    expect(new Set(rows.map((row) => row.seed))).toEqual(new Set([0, 1]));
    const traces = readTraces(join(dir, "rows.traces.jsonl"));
    expect(traces.size).toBe(12);
    for (const trace of traces.values()) {
      const replay = await replayTrace(trace);
      expect(replay.difference, trace.key).toBeNull();
      expect(replay.identical).toBe(true);
    }
    const resumed = findTrace(
      join(dir, "rows.traces.jsonl"),
      rows.find((row) => row.scenario === "compaction_chain_resume")?.key,
    );
    expect(resumed.initialSnapshot).toMatchObject({ value: "infer" });
    expect((resumed.finalSnapshot as { status: string }).status).toBe("done");
  });

  it("rejects bad input with the list of valid values", async () => {
    const out = join(workdir(), "rows.jsonl");
    await expect(runEval({ scenario: ["nope"], out }, quietIo)).rejects.toThrow(
      /Valid scenarios: basic_2step/,
    );
    await expect(runEval({ tags: ["nope"], out }, quietIo)).rejects.toThrow(/Valid tags: .*stateful/);
    await expect(runEval({ ablation: ["no_brakes"], out }, quietIo)).rejects.toThrow(
      /Valid ablation presets: reforged, no_rescue, no_nudge, no_steps, no_recovery, no_compact, bare, reforged\+subsets, reforged\+hold, reforged\+escalation, no_force, all, ai_sdk/,
    );
    await expect(runEval({ backend: "gpt-9", out }, quietIo)).rejects.toThrow(
      /Valid backends: sim-model, openai-compatible, ollama, llama-cpp, anthropic/,
    );
    await expect(runEval({ profile: "chaos", out, scenario: ["basic_2step"] }, quietIo)).rejects.toThrow(
      /Valid profiles/,
    );
    await expect(runEval({ runs: 0, out }, quietIo)).rejects.toThrow(/--runs/);
    await expect(runEval({ backend: "ollama", out }, quietIo)).rejects.toThrow(/needs --model/);
  });
});

describe("the AI SDK peer loop", () => {
  it("runs the same scenarios against the same backend, and stops on a text reply the guarded loop recovers from", async () => {
    const sim = await startSimModel({});
    try {
      const entry = scenario("argument_fidelity");
      // The seed whose first turn, under the formats profile, is prose (derived, not hard-coded).
      const seed = Array.from({ length: 500 }, (_, index) => index).find(
        (candidate) =>
          planTurn({
            scenarioId: entry.id,
            reference: entry.reference,
            profile: FAULT_PROFILES.formats!,
            seed: candidate,
            messages: [{ role: "user", content: entry.userMessage }],
          }).fault === FaultKind.PROSE,
      );
      expect(seed).toBeDefined();
      const endpoint = { baseURL: sim.url, modelId: simModelName("formats", entry.id, seed ?? 0) };
      const peer = await runPeer({ key: "p", scenario: entry, endpoint, runId: "p" });
      expect(peer.measurement).toMatchObject({
        completed: false,
        failureKind: "text_response",
        iterations: 1,
      });
      expect(peer.trace.config).toEqual(AI_SDK_CONFIG);

      const clean = await runPeer({
        key: "c",
        scenario: entry,
        endpoint: { ...endpoint, modelId: simModelName("clean", entry.id, 0) },
        runId: "c",
      });
      expect(clean.measurement).toMatchObject({ accurate: true, iterations: 3 });
      expect(
        clean.trace.messages.filter((entryMessage) => entryMessage.message.metadata.type === "tool_call"),
      ).toHaveLength(3);

      const session = await startBackend("sim-model", { profile: "formats", baseUrl: sim.url });
      const { runForge } = await import("../../eval/run/forge-run.ts");
      const forge = await runForge({
        key: "f",
        scenario: entry,
        config: ABLATION_PRESETS.reforged!,
        client: session.createClient({ scenario: entry, seed: seed ?? 0 }),
        runId: "f",
      });
      expect(forge.measurement.accurate).toBe(true);
      expect(forge.measurement.nudges.retry).toBeGreaterThanOrEqual(1);
    } finally {
      await sim.close();
    }
  });
});

describe("resume after kill -9", () => {
  let child: ChildProcess | null = null;
  afterEach(() => {
    if (child && child.exitCode === null) child.kill("SIGKILL");
  });

  const spawnEval = (out: string, extra: string[] = []) =>
    spawn(
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
        "20",
        "--profile",
        "mixed",
        "--out",
        out,
        "--no-progress",
        "--no-report",
        "--workers",
        "1",
        "--concurrency",
        "2",
        "--delay-ms",
        "5",
        ...extra,
      ],
      { cwd: process.cwd(), stdio: ["ignore", "pipe", "pipe"] },
    );

  it("loses and duplicates no row", async () => {
    const out = join(workdir(), "rows.jsonl");
    child = spawnEval(out);
    const started = Date.now();
    while (Date.now() - started < 60_000) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      if (existsSync(out) && readFileSync(out, "utf8").split("\n").length > 12) break;
    }
    child.kill("SIGKILL");
    await new Promise((resolve) => child?.once("exit", resolve));
    const before = rowsOf(out).length;
    expect(before).toBeGreaterThan(8);
    expect(before).toBeLessThan(80);
    // A write torn by the kill: the resume must cut it, not merge the next row into it.
    appendFileSync(out, '{"schema":1,"key":"sim-model|sim/mixed|reforged|basic_2s');

    child = spawnEval(out, ["--resume"]);
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise((resolve) => child?.once("exit", resolve));
    expect(code, stderr).toBe(0);
    expect(stderr).toMatch(/cut an interrupted last line/);
    expect(stderr).toMatch(new RegExp(`${before} already in`));
    const { rows, problems } = readJsonl(out, runRowSchema);
    expect(problems).toEqual([]);
    expect(rows).toHaveLength(80);
    expect(new Set(rows.map((row) => row.key)).size).toBe(80);
    const traces = readTraces(out.replace(/\.jsonl$/, ".traces.jsonl"));
    for (const row of rows) expect(traces.has(row.key), row.key).toBe(true);
  }, 120_000);
});
