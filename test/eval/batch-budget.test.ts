import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readJsonl } from "../../eval/batch/jsonl.ts";
import { runRowSchema } from "../../eval/batch/row.ts";
import { loadBatchConfig, runBatchConfig } from "../../eval/cli/batch-eval.ts";
import type { ProgressReporter } from "../../eval/cli/progress.ts";
import { reportEval } from "../../eval/cli/report-eval.ts";
import { ServerManager } from "../../src/server/server-manager.ts";
import { ensureLlamaServer, ensureTestModel } from "../helpers/test-model.ts";

const writeConfig = (config: unknown): string => {
  const path = join(mkdtempSync(join(tmpdir(), "forge-budget-")), "batch.json");
  writeFileSync(path, JSON.stringify(config));
  return path;
};

describe("the budget mode of a llamaserver target", () => {
  it("is validated with a message that names the modes, and budgetTokens goes with manual only", () => {
    const target = { backend: "llamaserver", gguf: "m.gguf" };
    expect(() =>
      loadBatchConfig(writeConfig({ out: "x.jsonl", targets: [{ ...target, budget: "huge" }] })),
    ).toThrow(/targets\.0\.budget: must be one of backend, manual, forge-full, forge-fast/);
    expect(() =>
      loadBatchConfig(writeConfig({ out: "x.jsonl", targets: [{ ...target, budget: "manual" }] })),
    ).toThrow(/targets\.0\.budgetTokens: budget "manual" needs budgetTokens/);
    expect(() =>
      loadBatchConfig(
        writeConfig({ out: "x.jsonl", targets: [{ ...target, budget: "forge-full", budgetTokens: 512 }] }),
      ),
    ).toThrow(/targets\.0\.budgetTokens: budgetTokens is used only with budget "manual"/);
  });

  it("reaches llama-server's launch (n_ctx in /props), is recorded in the rows, and a target whose runs are all in the file starts no server", async () => {
    const [binaryPath, gguf] = await Promise.all([ensureLlamaServer(), ensureTestModel()]);
    const dir = mkdtempSync(join(tmpdir(), "forge-budget-"));
    const out = join(dir, "rows.jsonl");
    const launch = { ctx: 2048, threads: 2, slots: 1, extraFlags: ["--no-webui"] };
    const config = loadBatchConfig(
      writeConfig({
        out,
        runs: 1,
        scenarios: ["basic_2step"],
        targets: [
          {
            backend: "llamaserver",
            gguf,
            model: "manual-768",
            launch,
            budget: "manual",
            budgetTokens: 768,
          },
          { backend: "llamaserver", gguf, model: "fast", launch, budget: "forge-fast" },
        ],
      }),
    );
    const managers: ServerManager[] = [];
    const serverLog: string[] = [];
    const createServerManager = () => {
      const manager = new ServerManager({
        backend: "llamaserver",
        binaryPath,
        logger: (line) => serverLog.push(line),
        stopTimeoutMs: 3_000,
      });
      managers.push(manager);
      return manager;
    };
    // What each running server reports in /props while its target's runs start.
    const served: Promise<number>[] = [];
    const propsOfRunningServer: ProgressReporter = {
      start: () => {
        const info = managers.at(-1)?.info;
        if (info) {
          served.push(
            fetch(`${info.baseUrl}/props`)
              .then((response) => response.json())
              .then(
                (props) =>
                  (props as { default_generation_settings: { n_ctx: number } }).default_generation_settings
                    .n_ctx,
              ),
          );
        }
      },
      update() {},
      stop() {},
    };
    const lines: string[] = [];
    const io = {
      stdout: () => {},
      stderr: (text: string) => lines.push(text),
      progress: propsOfRunningServer,
    };
    expect(await runBatchConfig(config, io, { createServerManager })).toBe(2);
    const [manualCtx, fastCtx] = await Promise.all(served);
    expect(manualCtx).toBe(768);
    // forge-fast: started without -c (the launch ctx 2048 is ignored), then restarted with half.
    expect(fastCtx).toBeGreaterThan(0);
    const restart = /forge-fast: \/props n_ctx is (\d+); restarting llama-server with -c (\d+)/.exec(
      serverLog.join("\n"),
    );
    expect(restart).not.toBeNull();
    const [, full, half] = restart ?? [];
    expect(lines.join("")).toContain("forge-fast: ignoring ctx 2048; llama-server sizes the context");
    expect(Number(half)).toBe(Math.floor(Number(full) / 2));
    expect(fastCtx).toBe(Number(half));

    const rows = readJsonl(out, runRowSchema).rows;
    expect(rows).toHaveLength(2);
    expect(rows.find((row) => row.model === "manual-768")?.settings).toMatchObject({
      managedServer: "llamaserver",
      budgetMode: "manual",
      contextTokens: 768,
    });
    expect(rows.find((row) => row.model === "fast")?.settings).toMatchObject({
      managedServer: "llamaserver",
      budgetMode: "forge-fast",
      contextTokens: fastCtx,
    });
    for (const manager of managers) expect(manager.status).toBe("stopped");

    // Run again: every run is in the file, so neither target starts llama-server.
    const again: string[] = [];
    const quiet: ProgressReporter = { start() {}, update() {}, stop() {} };
    const before = managers.length;
    await runBatchConfig(
      config,
      { stdout: () => {}, stderr: (text) => again.push(text), progress: quiet },
      { createServerManager },
    );
    expect(managers).toHaveLength(before);
    expect(again.join("").match(/all 1 runs already in .*; llama-server not started/g)).toHaveLength(2);
    expect(readJsonl(out, runRowSchema).rows).toHaveLength(2);
    // Both targets are in the plan again, so the report is not partial.
    expect(await reportEval([out], {}, { stdout: () => {}, stderr: () => {} })).toBe(2);
  }, 600_000);
});
