/**
 * Ollama mode: nothing is spawned, the budget comes from Ollama's VRAM tiers, the client gets
 * `num_ctx`, and stop unloads the model with `keep_alive: 0`. Ollama cannot run here, so a local
 * server replays its documented response shapes (`test/fixtures/ollama/`).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HardwareDetectionError } from "../../src/core/errors.ts";
import { BudgetMode } from "../../src/server/budget-mode.ts";
import { ServerStartError } from "../../src/server/errors.ts";
import type { HardwareProfile } from "../../src/server/hardware.ts";
import { ServerManager } from "../../src/server/server-manager.ts";
import { setupBackend } from "../../src/server/setup-backend.ts";
import { fixture, json, ReplayServer, raw, unusedPort } from "../clients/helpers/replay-server.ts";
import { gpuPresent } from "./helpers/gpu.ts";
import { recordingLogger } from "./helpers/server-processes.ts";

const VERSION = "GET /api/version";
const UNLOAD = "POST /api/generate";

let ollama: ReplayServer;
let logger: ReturnType<typeof recordingLogger>;

beforeEach(async () => {
  ollama = await ReplayServer.start();
  logger = recordingLogger();
});
afterEach(async () => {
  await ollama.close();
});

function gpu(vramTotalMb: number): HardwareProfile {
  const name = `GPU with ${vramTotalMb} MiB`;
  return {
    gpus: [{ vendor: "nvidia", name, busAddress: "01:00.0", vramTotalMb, source: "nvidia-smi" }],
    gpuName: name,
    vramTotalMb,
  };
}

function numCtxSpy() {
  const calls: (number | null)[] = [];
  return { calls, setNumCtx: (numCtx: number | null) => calls.push(numCtx) };
}

function setup(
  budgetMode: BudgetMode,
  hardware: () => Promise<HardwareProfile | null>,
  client = numCtxSpy(),
) {
  return setupBackend({
    backend: "ollama",
    model: "llama3.2",
    ollamaUrl: ollama.url,
    budgetMode,
    client,
    logger: logger.log,
    detectHardware: hardware,
  });
}

describe("ServerManager in Ollama mode", () => {
  it("attaches without spawning, sets num_ctx from the VRAM tier, and unloads with keep_alive 0 on stop", async () => {
    ollama
      .reply(VERSION, json({ version: "0.12.6" }))
      .reply(UNLOAD, raw(fixture("ollama/generate-unload.json")));
    const client = numCtxSpy();
    const { server, budgetTokens, contextManager } = await setup(
      BudgetMode.FORGE_FULL,
      async () => null,
      client,
    );
    expect(budgetTokens).toBe(4096);
    expect(contextManager.budgetTokens).toBe(4096);
    expect(client.calls).toEqual([4096]);
    expect(server.info).toMatchObject({
      backend: "ollama",
      baseUrl: ollama.url,
      pid: null,
      port: null,
      props: null,
    });
    expect(server.actor.getSnapshot().context.pid).toBeNull();
    expect(logger.lines).toContain(
      "budget: 4096 tokens (forge-full: Ollama's VRAM tier for no GPU detected is 4096)",
    );
    expect(logger.lines).toContain("num_ctx set to 4096 on the client");

    await server.stop();
    expect(server.status).toBe("stopped");
    expect(ollama.bodyOf(UNLOAD)).toEqual({ model: "llama3.2", keep_alive: 0 });
    ollama.assertDone();
  });

  it.each([
    { mode: BudgetMode.FORGE_FULL, vram: 12_288, budget: 4096, numCtx: 4096 },
    { mode: BudgetMode.FORGE_FULL, vram: 24_576, budget: 32_768, numCtx: 32_768 },
    { mode: BudgetMode.FORGE_FULL, vram: 49_152, budget: 262_144, numCtx: 262_144 },
    { mode: BudgetMode.FORGE_FAST, vram: 24_576, budget: 16_384, numCtx: 16_384 },
    { mode: BudgetMode.BACKEND, vram: 24_576, budget: 32_768, numCtx: null },
    { mode: BudgetMode.MANUAL, vram: 24_576, budget: 6000, numCtx: 6000 },
  ])(
    "$mode with $vram MiB of VRAM → $budget tokens, num_ctx $numCtx",
    async ({ mode, vram, budget, numCtx }) => {
      ollama.reply(VERSION, json({ version: "0.12.6" }));
      const client = numCtxSpy();
      const result = await setupBackend({
        backend: "ollama",
        model: "llama3.2",
        ollamaUrl: ollama.url,
        budgetMode: mode,
        manualTokens: 6000,
        client,
        logger: logger.log,
        detectHardware: async () => gpu(vram),
      });
      expect(result.budgetTokens).toBe(budget);
      expect(client.calls).toEqual([numCtx]);
      expect(logger.lines).toContain(
        `GPU detected: GPU with ${vram} MiB, ${vram} MiB VRAM in total (nvidia-smi)`,
      );
      ollama.assertDone();
    },
  );

  it.skipIf(gpuPresent)(
    "detects no GPU on this machine and falls back to Ollama's smallest tier",
    async () => {
      ollama.reply(VERSION, json({ version: "0.12.6" }));
      const server = new ServerManager({ backend: "ollama", ollamaUrl: ollama.url, logger: logger.log });
      await server.start({ model: "llama3.2" });
      await expect(server.resolveBudget(BudgetMode.FORGE_FAST)).resolves.toBe(2048);
      expect(logger.lines).toContain("no NVIDIA or AMD GPU with readable VRAM detected");
      expect(logger.lines).toContain(
        "budget: 2048 tokens (forge-fast: Ollama's VRAM tier for no GPU detected is 4096, halved)",
      );
    },
  );

  it("treats a failed hardware detection as no GPU, and logs why", async () => {
    ollama.reply(VERSION, json({ version: "0.12.6" }));
    const { budgetTokens, hardware } = await setup(BudgetMode.FORGE_FULL, async () => {
      throw new HardwareDetectionError("systeminformation.graphics() failed: lspci crashed");
    });
    expect(hardware).toBeNull();
    expect(budgetTokens).toBe(4096);
    expect(logger.lines).toContain(
      "GPU detection failed, treating the machine as GPU-less: systeminformation.graphics() failed: lspci crashed",
    );
  });

  it("fails with a clear ServerStartError when Ollama does not answer", async () => {
    const server = new ServerManager({
      backend: "ollama",
      ollamaUrl: `http://127.0.0.1:${await unusedPort()}`,
      logger: logger.log,
    });
    const error = await server.start({ model: "llama3.2" }).catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(ServerStartError);
    expect(error).toMatchObject({ kind: "unreachable" });
    expect((error as Error).message).toMatch(
      /Ollama did not answer at .*\/api\/version \(no connection\)\. Start it with `ollama serve`/,
    );
    expect(server.status).toBe("failed");
  });

  it("unloads the previous model when started with another one", async () => {
    ollama
      .reply(VERSION, json({ version: "0.12.6" }), json({ version: "0.12.6" }))
      .reply(
        UNLOAD,
        raw(fixture("ollama/generate-unload.json")),
        raw(fixture("ollama/generate-unload.json")),
      );
    const server = new ServerManager({ backend: "ollama", ollamaUrl: ollama.url, logger: logger.log });
    await server.start({ model: "llama3.2" });
    await server.start({ model: "llama3.2" });
    expect(logger.lines).toContain("reusing the running Ollama (pid none): same configuration");
    await server.start({ model: "qwen3:8b" });
    await server.stop();
    expect(ollama.requestsTo(UNLOAD).map((request) => request.json)).toEqual([
      { model: "llama3.2", keep_alive: 0 },
      { model: "qwen3:8b", keep_alive: 0 },
    ]);
    ollama.assertDone();
  });

  it("still stops when the unload is refused, and logs Ollama's answer", async () => {
    ollama
      .reply(VERSION, json({ version: "0.12.6" }))
      .reply(UNLOAD, raw(fixture("ollama/error-model-not-found.json"), { status: 404 }));
    const server = new ServerManager({ backend: "ollama", ollamaUrl: ollama.url, logger: logger.log });
    await server.start({ model: "llama3.2" });
    await server.stop();
    expect(server.status).toBe("stopped");
    expect(
      logger.lines.some(
        (line) => line.startsWith("warning: could not unload the Ollama model: ") && line.includes("404"),
      ),
    ).toBe(true);
  });
});
