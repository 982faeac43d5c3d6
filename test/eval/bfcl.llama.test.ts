/**
 * BFCL end to end on the real model: BFCL's own cases and checker (PyPI `bfcl-eval`, installed by
 * `setupBfcl` under `.cache/bfcl`, run in a separate Python process) against Qwen2.5-Coder 0.5B in
 * the project's llama-server, directly, through `forge proxy` (its defaults, the parallel
 * follow-up, the call-confidence gate) and through the guarded loop in process (`runInference`,
 * with the follow-up). Three cases: one call, several calls in one answer, and one where no
 * function fits.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readJsonl } from "../../eval/batch/jsonl.ts";
import { loadCases } from "../../eval/bfcl/cases.ts";
import { buildReport, scoreRows } from "../../eval/bfcl/report.ts";
import { type BfclRow, bfclRowSchema, runBfcl } from "../../eval/bfcl/run.ts";
import { type BfclInstall, setupBfcl } from "../../eval/bfcl/setup.ts";
import { isModelInstalled, modelPath } from "../../scripts/setup-model.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { startTestLlamaServer, type TestLlamaServer } from "../helpers/llama-server-process.ts";

const IDS = ["simple_python_0", "parallel_0", "irrelevance_120"];

describe("BFCL through the guardrails on the real model", () => {
  let server: TestLlamaServer | undefined;
  let install: BfclInstall;
  let rows: BfclRow[] = [];
  let cases: Awaited<ReturnType<typeof loadCases>> = [];

  beforeAllOrFail(async () => {
    install = await setupBfcl(() => {});
    cases = (await loadCases(install, ["simple_python", "parallel", "irrelevance"])).filter((item) =>
      IDS.includes(item.id),
    );
    if (!(await isModelInstalled())) throw new Error(`${modelPath()} is missing: run npm run setup:model`);
    server = await startTestLlamaServer({
      modelPath: modelPath(),
      ctx: 4096,
      threads: 2,
      extraFlags: ["-n", "256"],
    });
    const out = join(mkdtempSync(join(tmpdir(), "forge-bfcl-test-")), "rows.jsonl");
    await runBfcl({
      cases,
      targets: ["direct", "proxy", "proxy-parallel", "proxy-confidence", "loop-parallel"],
      server: { baseUrl: `${server.baseUrl}/v1`, model: "qwen2.5-coder-0.5b", temperature: 0 },
      out,
      resume: false,
      caseTimeoutMs: 240_000,
    });
    rows = readJsonl(out, bfclRowSchema).rows;
  }, 900_000);

  afterAll(async () => {
    await server?.stop();
  });

  const row = (target: string, id: string) => rows.find((item) => item.target === target && item.id === id);

  it("answers every case on every target", () => {
    expect(cases.map((item) => item.id).sort()).toEqual([...IDS].sort());
    expect(rows).toHaveLength(IDS.length * 5);
    expect(rows.filter((item) => item.error !== null)).toEqual([]);
  });

  it("scores by BFCL's checker: the proxy reads the fenced call the server leaves as text", async () => {
    const verdicts = await scoreRows(install, rows, new Map(cases.map((item) => [item.id, item])));
    const valid = (target: string, id: string) => verdicts.get(row(target, id)?.key ?? "")?.valid;
    // Directly, the 0.5B's ```json fence is text to llama-server's parser: no call, a failed case.
    expect(row("direct", "simple_python_0")?.calls).toEqual([]);
    expect(valid("direct", "simple_python_0")).toBe(false);
    expect(valid("proxy", "simple_python_0")).toBe(true);
    // No function fits: the prose answer comes back at once through the proxy (the prose policy).
    expect(valid("proxy", "irrelevance_120")).toBe(true);
    expect(row("proxy", "irrelevance_120")).toMatchObject({ llmCalls: 1, prose: true, nudges: 0 });
    // Several calls: the follow-up lets the model write the second one.
    expect(row("proxy", "parallel_0")?.calls).toHaveLength(1);
    expect(
      row("proxy-parallel", "parallel_0")?.calls.map((call) => JSON.parse(call.arguments).artist),
    ).toEqual(["Taylor Swift", "Maroon 5"]);
    expect(valid("proxy-parallel", "parallel_0")).toBe(true);
    // The guarded loop runs the same follow-up (`runInference({ followUpMaxCalls })`), and its
    // prose policy answers the irrelevant question in text.
    expect(
      row("loop-parallel", "parallel_0")?.calls.map((call) => JSON.parse(call.arguments).artist),
    ).toEqual(["Taylor Swift", "Maroon 5"]);
    expect(row("loop-parallel", "parallel_0")?.llmCalls).toBeGreaterThan(1);
    expect(valid("loop-parallel", "parallel_0")).toBe(true);
    expect(valid("loop-parallel", "simple_python_0")).toBe(true);
    expect(row("loop-parallel", "simple_python_0")?.calls).toHaveLength(1);
    expect(valid("loop-parallel", "irrelevance_120")).toBe(true);
    // The call-confidence gate (ADR 040) asked the model how likely it was to open with a call: the
    // 0.5B is sure of this one, so the call stands; a prose answer is never probed.
    expect(row("proxy-confidence", "simple_python_0")).toMatchObject({ declined: 0 });
    expect(row("proxy-confidence", "simple_python_0")?.callConfidence).toBeGreaterThan(0.5);
    expect(valid("proxy-confidence", "simple_python_0")).toBe(true);
    expect(row("proxy-confidence", "irrelevance_120")?.callConfidence).toBeUndefined();
    const report = buildReport(rows, verdicts);
    expect(report.targets.map((target) => target.target)).toEqual([
      "direct",
      "proxy",
      "proxy-parallel",
      "proxy-confidence",
      "loop-parallel",
    ]);
  }, 120_000);

  it("fails a wrong answer: the checker is not a formality", async () => {
    const wrong = rows
      .filter((item) => item.target === "proxy" && item.id === "simple_python_0")
      .map((item) => ({
        ...item,
        key: `${item.key}|wrong`,
        calls: [{ name: item.calls[0]?.name ?? "x", arguments: '{"base": 11, "height": 5}' }],
      }));
    const verdicts = await scoreRows(install, wrong, new Map(cases.map((item) => [item.id, item])));
    expect(verdicts.get(wrong[0]?.key ?? "")).toMatchObject({ valid: false });
  }, 120_000);
});
