/**
 * `forge launch --backend llamaserver --gguf` against a real llama-server (the bundled build, the
 * tiny random-weight test model): the command reaches the model through the proxy, forge exits
 * with its status, and the llama-server it started is gone afterwards.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { exitOf, spawnForge } from "../helpers/forge-cli.ts";
import { ensureLlamaServer, ensureTestModel } from "../helpers/test-model.ts";
import { isAlive, PidReaper } from "../server/helpers/server-processes.ts";

const AGENT = `
const response = await fetch(process.env.OPENAI_BASE_URL + "/chat/completions", {
  method: "POST",
  headers: { "content-type": "application/json", authorization: "Bearer " + process.env.OPENAI_API_KEY },
  body: JSON.stringify({ model: process.env.FORGE_MODEL, max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }),
});
const answer = await response.json();
console.error("agent got", response.status, JSON.stringify(answer).slice(0, 300));
process.exit(response.status === 200 && typeof answer.choices[0].message.content === "string" ? 4 : 1);
`;

const reaper = new PidReaper();
let binaryPath: string;
let modelPath: string;
let folder: string;

beforeAllOrFail(async () => {
  [binaryPath, modelPath] = await Promise.all([ensureLlamaServer(), ensureTestModel()]);
  folder = mkdtempSync(join(tmpdir(), "forge-launch-managed-"));
  writeFileSync(join(folder, "agent.mjs"), AGENT);
}, 900_000);

afterAll(() => {
  reaper.killAll();
  rmSync(folder, { recursive: true, force: true });
});

describe("forge launch in managed mode", () => {
  it("runs the command against the llama-server it starts, and stops that server when it exits", async () => {
    const logFile = join(folder, "proxy.log");
    const run = spawnForge(
      [
        "launch",
        "--backend",
        "llamaserver",
        "--gguf",
        modelPath,
        "--ctx",
        "2048",
        "--slots",
        "1",
        "--log-file",
        logFile,
        "--",
        process.execPath,
        join(folder, "agent.mjs"),
      ],
      { ...process.env, LLAMA_SERVER_PATH: binaryPath, FORGE_DEBUG: "" },
    );
    expect(await exitOf(run.child), run.output()).toBe(4);
    expect(run.output()).toContain("agent got 200");
    const log = readFileSync(logFile, "utf8");
    const pid = Number(log.match(/llama-server ready at \S+ \(pid (\d+)/)?.[1]);
    expect(pid).toBeGreaterThan(0);
    reaper.add(pid);
    // Stopped by forge's clean-up (not only by the parent-death signal when forge exited).
    expect(log).toContain(`llama-server: stopping pid ${pid} with SIGTERM`);
    expect(log).toContain("llama-server stopped");
    expect(isAlive(pid)).toBe(false);
  }, 120_000);
});
