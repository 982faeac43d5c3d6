import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readJsonl } from "../../eval/batch/jsonl.ts";
import { runRowSchema } from "../../eval/batch/row.ts";
import { loadBatchConfig, probeTarget, probeTargets, runBatchConfig } from "../../eval/cli/batch-eval.ts";
import type { ProgressReporter } from "../../eval/cli/progress.ts";
import { startSimModel } from "../../eval/sim-model/server.ts";
import { ServerManager } from "../../src/server/server-manager.ts";
import { ensureLlamaServer, ensureTestModel } from "../helpers/test-model.ts";

describe("a batch config with several targets", () => {
  it("refuses a config that does not validate, naming the path of each problem", () => {
    const path = join(mkdtempSync(join(tmpdir(), "forge-batch-")), "bad.json");
    writeFileSync(
      path,
      JSON.stringify({ out: "x.jsonl", targets: [{ backend: "llamaserver" }, { backend: "gpt" }] }),
    );
    expect(() => loadBatchConfig(path)).toThrow(/targets\.0\.gguf: .*; targets\.1\.backend: /);
  });

  it("--probe checks every target before the batch and names each one that cannot run", async () => {
    const sim = await startSimModel({ profile: "clean" });
    const ollama = createServer((_request, response) => {
      response.setHeader("content-type", "application/json");
      response.end(JSON.stringify({ models: [{ name: "llama3.2:latest" }] }));
    });
    await new Promise<void>((resolve) => ollama.listen(0, "127.0.0.1", resolve));
    const ollamaUrl = `http://127.0.0.1:${(ollama.address() as AddressInfo).port}`;
    try {
      const config = {
        out: "unused.jsonl",
        runs: 1,
        scenarios: [],
        tags: [],
        ablation: ["reforged"],
        seed: 0,
        targets: [
          { backend: "openai-compatible" as const, baseUrl: sim.url, model: "sim/clean" },
          { backend: "ollama" as const, baseUrl: ollamaUrl, model: "llama3.2" },
          { backend: "sim-model" as const, profile: "clean" },
        ],
      };
      const lines: string[] = [];
      const io = { stdout: () => {}, stderr: (text: string) => lines.push(text) };
      await probeTargets(config, io);
      expect(lines.join("")).toContain("probe: target 2 ollama llama3.2: ok");
      const broken = {
        ...config,
        targets: [
          { backend: "llamaserver" as const, gguf: "/nonexistent/model.gguf", launch: {} },
          { backend: "openai-compatible" as const, baseUrl: "http://127.0.0.1:1/v1", model: "m" },
          { backend: "ollama" as const, baseUrl: ollamaUrl, model: "qwen3:8b" },
          { backend: "sim-model" as const, profile: "chaos" },
        ],
      };
      await expect(probeTargets(broken, io)).rejects.toThrow(
        /target 1 \(llamaserver model\): GGUF \/nonexistent\/model.gguf does not exist; target 2 \(openai-compatible m\): GET http:\/\/127.0.0.1:1\/v1\/models failed: .*; target 3 \(ollama qwen3:8b\): Ollama has no model 'qwen3:8b' \(ollama pull qwen3:8b\); it has: llama3.2:latest; target 4 \(sim-model chaos\): unknown profile 'chaos'/,
      );
      expect(await probeTarget({ backend: "anthropic", model: "claude-haiku-4-5" }, {})).toBe(
        "no API key: set apiKey or ANTHROPIC_API_KEY",
      );
    } finally {
      await sim.close();
      await new Promise<void>((resolve) => ollama.close(() => resolve()));
    }
  });

  it("runs a llama-server GGUF (started and stopped by the ServerManager) and the sim-model into one file; interrupted, then resumed", async () => {
    const [binaryPath, gguf] = await Promise.all([ensureLlamaServer(), ensureTestModel()]);
    const dir = mkdtempSync(join(tmpdir(), "forge-batch-"));
    const path = join(dir, "batch.json");
    const out = join(dir, "rows.jsonl");
    writeFileSync(
      path,
      JSON.stringify({
        out,
        runs: 2,
        scenarios: ["basic_2step", "sequential_3step"],
        targets: [
          {
            backend: "llamaserver",
            gguf,
            model: "tiny-random",
            launch: { ctx: 2048, threads: 2, slots: 1, extraFlags: ["--no-webui"] },
            temperature: 0,
          },
          { backend: "sim-model", profile: "clean" },
        ],
      }),
    );
    const config = loadBatchConfig(path);
    const managers: ServerManager[] = [];
    const createServerManager = () => {
      const manager = new ServerManager({
        backend: "llamaserver",
        binaryPath,
        logger: () => {},
        stopTimeoutMs: 3_000,
      });
      managers.push(manager);
      return manager;
    };
    const lines: string[] = [];
    const io = (progress: ProgressReporter) => ({
      stdout: () => {},
      stderr: (text: string) => lines.push(text),
      progress,
    });

    // Interrupted after the first row of the first target: the batch stops, llama-server is stopped.
    const controller = new AbortController();
    const interrupting: ProgressReporter = {
      start() {},
      update: () => controller.abort(),
      stop() {},
    };
    const first = await runBatchConfig(config, io(interrupting), {
      progress: false,
      signal: controller.signal,
      createServerManager,
    });
    expect(first).toBe(0);
    const partial = readJsonl(out, runRowSchema).rows;
    expect(partial).toHaveLength(1);
    expect(partial[0]).toMatchObject({
      backend: "openai-compatible",
      model: "tiny-random",
      simulated: false,
    });
    expect(managers[0]?.status).toBe("stopped");

    // Resumed: the rest of both targets, every planned run exactly once.
    const updates: string[] = [];
    const counting: ProgressReporter = { start() {}, update: (row) => updates.push(row.key), stop() {} };
    const second = await runBatchConfig(config, io(counting), { progress: false, createServerManager });
    expect(second).toBe(2);
    const rows = readJsonl(out, runRowSchema).rows;
    expect(rows).toHaveLength(8);
    expect(new Set(rows.map((row) => row.key)).size).toBe(8);
    expect(updates).toHaveLength(7);
    expect(
      rows.filter((row) => row.backend === "openai-compatible" && row.model === "tiny-random"),
    ).toHaveLength(4);
    expect(rows.filter((row) => row.backend === "sim-model" && row.accurate)).toHaveLength(4);
    expect(rows.find((row) => !row.simulated)?.settings).toMatchObject({ temperature: 0, toolMode: "auto" });
    expect(managers).toHaveLength(2);
    for (const manager of managers) expect(manager.status).toBe("stopped");
    expect(lines.join("")).toMatch(
      /batch: target 1\/2: llamaserver tiny-random\n[\s\S]*batch: llama-server stopped/,
    );
  }, 600_000);
});
