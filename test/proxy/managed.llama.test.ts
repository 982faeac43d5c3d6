/**
 * Managed mode against a real llama-server (built from the bundled llama.cpp, tiny random-weight
 * test model): the proxy starts it through the ServerManager, the openai SDK gets a clean answer
 * through the guardrails, `/forge/health` reports the server, and closing the proxy stops it.
 */
import OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import { startManagedBackend } from "../../src/proxy/backend/managed-backend.ts";
import { type RunningProxy, startProxy } from "../../src/proxy/server.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { spawnForge } from "../helpers/forge-cli.ts";
import { ensureLlamaServer, ensureTestModel } from "../helpers/test-model.ts";
import { isAlive, PidReaper } from "../server/helpers/server-processes.ts";
import { weatherToolOpenAI } from "./helpers/proxy-fixture.ts";

/** The proxy's key: `/forge/health` shows the managed server's details only to a caller with it. */
const KEY = "proxy-key";
const AUTH = { headers: { authorization: `Bearer ${KEY}` } };
const reaper = new PidReaper();
let proxy: RunningProxy;

beforeAllOrFail(async () => {
  const [binaryPath, modelPath] = await Promise.all([ensureLlamaServer(), ensureTestModel()]);
  const backend = await startManagedBackend({
    launch: { ggufPath: modelPath, ctx: 2048, slots: 1, threads: 2 },
    manager: { binaryPath, logger: () => {}, stopTimeoutMs: 3_000 },
  });
  proxy = await startProxy({ backend, port: 0, serialize: true, maxRetries: 2, apiKey: KEY });
}, 900_000);

afterAll(async () => {
  await proxy?.close();
  reaper.killAll();
});

describe("forge proxy in managed mode", () => {
  let pid: number | null = null;

  it("reports the managed llama-server in /forge/health", async () => {
    const health = (await (await fetch(`${proxy.url}/forge/health`, AUTH)).json()) as {
      status: string;
      backend: {
        status: string;
        detail: { managed: boolean; status: string; pid: number | null; nCtx: number };
      };
    };
    expect(health.status).toBe("ok");
    expect(health.backend.detail).toMatchObject({ managed: true, status: "healthy", nCtx: 2048 });
    pid = health.backend.detail.pid;
    reaper.add(pid);
    expect(pid !== null && isAlive(pid)).toBe(true);
    expect((await fetch(`${proxy.url}/props`, AUTH)).status).toBe(200);
  });

  it("answers the openai SDK through the guardrails with a clean tool call or text", async () => {
    const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: KEY, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: "tiny",
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools: [weatherToolOpenAI],
      // Grammar-constrained by llama-server, so even random weights produce a call.
      tool_choice: "required",
      max_tokens: 64,
      temperature: 0,
      seed: 7,
    });
    const choice = completion.choices[0];
    if (choice?.finish_reason === "tool_calls") {
      const names = (choice.message.tool_calls ?? []).map((call) =>
        call.type === "function" ? call.function.name : "",
      );
      expect(names.length).toBeGreaterThan(0);
      expect(names.every((name) => name === "get_weather")).toBe(true);
    } else {
      expect(choice?.finish_reason).toBe("stop");
      expect(typeof choice?.message.content).toBe("string");
    }
  });

  it("stops llama-server when the proxy closes", async () => {
    await proxy.close();
    expect(pid).not.toBeNull();
    expect(isAlive(pid as number)).toBe(false);
  });
});

describe("forge proxy --backend llamaserver (CLI)", () => {
  it("starts llama-server, serves through it, and stops it on SIGTERM", async () => {
    const modelPath = await ensureTestModel();
    const { child, output } = spawnForge([
      "proxy",
      "--backend",
      "llamaserver",
      "--gguf",
      modelPath,
      "--ctx",
      "2048",
      "--port",
      "0",
      "--api-key",
      KEY,
    ]);
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    let pid: number | null = null;
    try {
      const deadline = Date.now() + 120_000;
      const listening = /listening on (http:\/\/127\.0\.0\.1:\d+)/;
      while (!listening.test(output())) {
        if (Date.now() > deadline || child.exitCode !== null) {
          throw new Error(`proxy did not start:\n${output()}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const url = output().match(listening)?.[1];
      // The call format read from the GGUF's own chat template (ADR 035), through /props.
      expect(output()).toContain("calls read as <tool_call>{…}</tool_call> (its chat template)");
      const health = (await (await fetch(`${url}/forge/health`, AUTH)).json()) as {
        backend: { status: string; detail: { pid: number | null } };
      };
      expect(health.backend.status).toBe("ok");
      pid = health.backend.detail.pid;
      reaper.add(pid);
      expect(pid !== null && isAlive(pid)).toBe(true);
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
    expect(isAlive(pid as number)).toBe(false);
  }, 180_000);
});
