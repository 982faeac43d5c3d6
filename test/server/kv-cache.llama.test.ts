/**
 * KV-cache quantization and multi-slot flags against a real llama-server: q8_0 K/V caches with a
 * unified KV buffer over two slots are accepted (the server logs the cache types it allocated),
 * and a cache type the model cannot take ends the start in a typed error with the server's reason.
 */
import { afterAll, describe, expect, it } from "vitest";
import { ServerStartError } from "../../src/server/errors.ts";
import { type ServerInfo, ServerManager } from "../../src/server/server-manager.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { ensureHead32TestModel } from "./helpers/kv-test-model.ts";
import { llamaServerFixtures, PidReaper } from "./helpers/server-processes.ts";

const reaper = new PidReaper();
const serverLines: string[] = [];
let binaryPath = "";
let modelPath = "";
let manager: ServerManager;
let info: ServerInfo;

beforeAllOrFail(async () => {
  ({ binaryPath, modelPath } = await llamaServerFixtures());
  const head32Model = await ensureHead32TestModel();
  manager = new ServerManager({
    backend: "llamaserver",
    binaryPath,
    logger: () => {},
    onServerLine: (line) => serverLines.push(line),
  });
  manager.on("server.ready", (ready) => reaper.add(ready.pid));
  info = await manager.start({
    ggufPath: head32Model,
    ctx: 2048,
    threads: 2,
    slots: 2,
    kvUnified: true,
    cacheTypeK: "q8_0",
    cacheTypeV: "q8_0",
    // Verbosity 4 makes llama.cpp log the KV cache's types and size.
    extraFlags: ["--verbosity", "4"],
  });
}, 900_000);

afterAll(async () => {
  await manager?.stop();
  reaper.killAll();
});

describe("KV-cache and slot flags", () => {
  it("accepts --cache-type-k q8_0 --cache-type-v q8_0 with --kv-unified and --parallel 2", async () => {
    expect(manager.status).toBe("healthy");
    expect(info.props).toMatchObject({ nCtx: 2048, totalSlots: 2 });
    const cacheLine = serverLines.find((line) => line.includes("llama_kv_cache: size ="));
    expect(cacheLine).toMatch(/K \(q8_0\):.*V \(q8_0\)/);
    expect(
      serverLines.some((line) => line.includes("n_slots = 2") && line.includes("kv_unified = 'true'")),
    ).toBe(true);
    const slots = (await (await fetch(`${info.baseUrl}/slots`)).json()) as { id: number; n_ctx: number }[];
    expect(slots.map((slot) => [slot.id, slot.n_ctx])).toEqual([
      [0, 2048],
      [1, 2048],
    ]);
  });

  it("serves a completion from the quantized cache", async () => {
    const response = await fetch(`${info.baseUrl}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], max_tokens: 4, temperature: 0 }),
    });
    expect(response.status).toBe(200);
    const completion = (await response.json()) as { choices: { message: { role: string } }[] };
    expect(completion.choices[0]?.message.role).toBe("assistant");
  });

  it("reports a cache type the model cannot take as a ServerStartError with llama-server's reason", async () => {
    // The shared test model's heads are 16 wide; q8_0 blocks are 32.
    const other = new ServerManager({ backend: "llamaserver", binaryPath, logger: () => {} });
    const error = await other
      .start({ ggufPath: modelPath, ctx: 2048, threads: 2, cacheTypeK: "q8_0", cacheTypeV: "q8_0" })
      .catch((failure: unknown) => failure);
    reaper.add(other.actor.getSnapshot().context.exit?.pid);
    await other.stop();
    expect(error).toBeInstanceOf(ServerStartError);
    expect(error).toMatchObject({ kind: "exited_during_start", exitCode: 1 });
    expect((error as ServerStartError).stderrTail).toContain(
      "K cache type q8_0 with block size 32 does not divide",
    );
  });
});
