/**
 * setupBackend against a real llama-server, one manager (so one process at a time) for the file:
 * every budget mode starts the server with the right `-c`, resolves the budget from `/props`, and
 * hands back a ContextManager with it. GPU detection is replaced by a fixed profile: llama-server
 * sizes its own context, so VRAM is only logged.
 */
import { afterAll, describe, expect, it } from "vitest";
import { TieredCompact } from "../../src/context/tiered-compact.ts";
import { BudgetResolutionError } from "../../src/core/errors.ts";
import { BudgetMode } from "../../src/server/budget-mode.ts";
import type { HardwareProfile } from "../../src/server/hardware.ts";
import { ServerManager } from "../../src/server/server-manager.ts";
import { setupBackend } from "../../src/server/setup-backend.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import {
  llamaServerFixtures,
  llamaServerPidsOnPort,
  PidReaper,
  recordingLogger,
} from "./helpers/server-processes.ts";

const rtx4090: HardwareProfile = {
  gpus: [
    {
      vendor: "nvidia",
      name: "NVIDIA GeForce RTX 4090",
      busAddress: "01:00.0",
      vramTotalMb: 24_564,
      source: "nvidia-smi",
    },
  ],
  gpuName: "NVIDIA GeForce RTX 4090",
  vramTotalMb: 24_564,
};
const reaper = new PidReaper();
const logger = recordingLogger();
let ggufPath = "";
let server: ServerManager;

beforeAllOrFail(async () => {
  const fixtures = await llamaServerFixtures();
  ggufPath = fixtures.modelPath;
  server = new ServerManager({
    backend: "llamaserver",
    binaryPath: fixtures.binaryPath,
    logger: logger.log,
    detectHardware: async () => rtx4090,
  });
  server.on("server.ready", (info) => reaper.add(info.pid));
}, 900_000);

afterAll(async () => {
  await server?.stop();
  reaper.killAll();
});

function setup(
  budgetMode: BudgetMode,
  options: { manualTokens?: number; ctx?: number; slots?: number } = {},
) {
  return setupBackend({
    backend: "llamaserver",
    ggufPath,
    budgetMode,
    server,
    logger: logger.log,
    ...(options.manualTokens !== undefined && { manualTokens: options.manualTokens }),
    launch: {
      threads: 2,
      ...(options.ctx !== undefined && { ctx: options.ctx }),
      ...(options.slots !== undefined && { slots: options.slots }),
    },
  });
}

describe("setupBackend with llama-server", () => {
  it("forge-full: starts without -c and takes llama-server's own n_ctx", async () => {
    const result = await setup(BudgetMode.FORGE_FULL, { ctx: 4096 });
    // The test model was trained on 2048 tokens, so that is what llama-server fits.
    expect(result.budgetTokens).toBe(2048);
    expect(result.server.info?.config.ctx).toBeUndefined();
    expect(result.contextManager.budgetTokens).toBe(2048);
    expect(result.contextManager.strategy).toBeInstanceOf(TieredCompact);
    expect(result.hardware).toBe(rtx4090);
    expect(logger.lines).toContain(
      "GPU detected: NVIDIA GeForce RTX 4090, 24564 MiB VRAM in total (nvidia-smi)",
    );
    expect(logger.lines).toContain("forge-full: ignoring ctx 4096; llama-server sizes the context");
    expect(logger.lines).toContain("budget: 2048 tokens (forge-full: n_ctx from /props)");
    expect(logger.lines).toContain("ContextManager: 2048 tokens, TieredCompact, compaction above 0.75");
  });

  it("forge-fast: discovers the maximum, restarts with half of it per slot, one process at a time", async () => {
    const before = server.actor.getSnapshot().context.launches;
    const result = await setup(BudgetMode.FORGE_FAST, { slots: 2 });
    expect(result.budgetTokens).toBe(1024);
    // Two slots without a unified cache split -c evenly, so -c is 2 × 1024.
    expect(result.server.info?.config).toMatchObject({ ctx: 2048, slots: 2 });
    expect(result.server.info?.props).toMatchObject({ nCtx: 1024, totalSlots: 2 });
    expect(result.contextManager.budgetTokens).toBe(1024);
    // One launch for the new configuration, one for the halved context.
    expect(server.actor.getSnapshot().context.launches).toBe(before + 2);
    expect(llamaServerPidsOnPort(result.server.info!.port!)).toEqual([result.server.info!.pid]);
    expect(logger.lines).toContain(
      "forge-fast: /props n_ctx is 2048; restarting llama-server with -c 2048 for 1024 per slot",
    );
  });

  it("manual: starts with -c = the budget and uses it as given", async () => {
    const result = await setup(BudgetMode.MANUAL, { manualTokens: 1536 });
    expect(result.budgetTokens).toBe(1536);
    expect(result.server.info?.config.ctx).toBe(1536);
    expect(result.server.info?.props?.nCtx).toBe(1536);
    expect(result.contextManager.budgetTokens).toBe(1536);
  });

  it("backend: keeps the configured -c and trusts /props", async () => {
    const result = await setup(BudgetMode.BACKEND, { ctx: 1024 });
    expect(result.budgetTokens).toBe(1024);
    expect(result.server.info?.props?.nCtx).toBe(1024);
  });

  it("manual without a token count fails before anything is started", async () => {
    const launches = server.actor.getSnapshot().context.launches;
    await expect(setup(BudgetMode.MANUAL)).rejects.toBeInstanceOf(BudgetResolutionError);
    expect(server.actor.getSnapshot().context.launches).toBe(launches);
  });
});
