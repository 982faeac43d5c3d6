/**
 * Managed mode you can leave running, against the real llama-server (tiny random-weight model):
 * its port refuses anyone without the proxy's per-process key, `/forge/health` hides it from
 * anyone without the proxy's key, a `kill -9` or a SIGSTOP of llama-server is noticed and
 * repaired, a manager that gives up makes the proxy answer 503 saying so, and a `kill -9` of the
 * proxy takes llama-server with it.
 */
import { readFileSync } from "node:fs";
import OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import type { ProxyBackend } from "../../src/proxy/backend/backend.ts";
import { startManagedBackend } from "../../src/proxy/backend/managed-backend.ts";
import { type RunningProxy, startProxy } from "../../src/proxy/server.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { spawnForge } from "../helpers/forge-cli.ts";
import { ensureLlamaServer, ensureTestModel } from "../helpers/test-model.ts";
import { isAlive, PidReaper, recordingLogger } from "../server/helpers/server-processes.ts";

const KEY = "operator-key";
const LAUNCH = { ctx: 2048, slots: 1, threads: 2 };
const reaper = new PidReaper();

interface ManagedDetail {
  managed: boolean;
  status: string;
  pid: number | null;
  restarts: number;
  lastError: string | null;
}
interface Health {
  status: string;
  proxy: Record<string, unknown>;
  backend: { status: string; url?: string; detail: ManagedDetail };
}

async function health(url: string, key?: string): Promise<Health> {
  const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
  return (await (await fetch(`${url}/forge/health`, { headers })).json()) as Health;
}

/** Polls `condition` every 100 ms; fails naming `what` after `limitMs` (a bound, not a measurement). */
async function waitUntil(condition: () => Promise<boolean>, what: string, limitMs = 60_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function managedProxy(supervision: Parameters<typeof startManagedBackend>[0]["supervision"]) {
  const [binaryPath, modelPath] = await Promise.all([ensureLlamaServer(), ensureTestModel()]);
  const logger = recordingLogger();
  const backend: ProxyBackend = await startManagedBackend({
    launch: { ggufPath: modelPath, ...LAUNCH },
    supervision,
    manager: { binaryPath, logger: logger.log, stopTimeoutMs: 3_000 },
  });
  const proxy = await startProxy({ backend, port: 0, apiKey: KEY, maxRetries: 0 });
  return { proxy, logs: logger.lines };
}

async function chat(url: string): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], max_tokens: 4 }),
  });
}

describe("managed llama-server: key, health, restarts", () => {
  let proxy: RunningProxy;
  let logs: string[];

  beforeAllOrFail(async () => {
    ({ proxy, logs } = await managedProxy({
      backoffMs: 100,
      probeIntervalMs: 300,
      probeTimeoutMs: 500,
      probeFailures: 2,
    }));
  }, 900_000);

  afterAll(async () => {
    await proxy?.close();
    reaper.killAll();
  });

  it("hides the backend's address from /forge/health without the proxy's key", async () => {
    const open = await health(proxy.url);
    expect(open).toMatchObject({ status: "ok", backend: { status: "ok", detail: { status: "healthy" } } });
    expect(JSON.stringify(open)).not.toMatch(/127\.0\.0\.1|"pid"|gguf|nCtx/);
    const wrong = await health(proxy.url, "not-the-key");
    expect(wrong.backend.url).toBeUndefined();
    const operator = await health(proxy.url, KEY);
    expect(operator.backend.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(operator.backend.detail.pid).toEqual(expect.any(Number));
    reaper.add(operator.backend.detail.pid);
  });

  it("llama-server's own port refuses requests without its key while the proxy serves", async () => {
    const { backend } = await health(proxy.url, KEY);
    const direct = backend.url as string;
    const props = await fetch(`${direct}/props`);
    expect(props.status).toBe(401);
    const directChat = await fetch(`${direct}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], max_tokens: 4 }),
    });
    expect(directChat.status).toBe(401);
    expect((await fetch(`${direct}/v1/models`)).status).toBe(401);
    // llama-server keeps /health public; it tells nothing but "ok".
    expect((await fetch(`${direct}/health`)).status).toBe(200);
    // The key travels in the environment, not on the command line that `ps` shows to every user.
    const pid = backend.detail.pid as number;
    expect(readFileSync(`/proc/${pid}/cmdline`, "utf8")).not.toMatch(/api-key/);
    expect(readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")).toContainEqual(
      expect.stringMatching(/^LLAMA_API_KEY=[\w-]{43}$/),
    );

    const viaProxy = await fetch(`${proxy.url}/props`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(viaProxy.status).toBe(200);
    expect((await chat(proxy.url)).status).toBe(200);
    const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: KEY, maxRetries: 0 });
    const models = await client.models.list();
    expect(models.data.length).toBeGreaterThan(0);
  });

  it("restarts llama-server after kill -9 and serves again", async () => {
    const before = (await health(proxy.url, KEY)).backend.detail;
    const pid = before.pid as number;
    process.kill(pid, "SIGKILL");
    let after = before;
    await waitUntil(async () => {
      after = (await health(proxy.url, KEY)).backend.detail;
      return after.status === "healthy" && after.pid !== pid;
    }, "a new healthy llama-server");
    reaper.add(after.pid);
    expect(isAlive(pid)).toBe(false);
    expect(after.restarts).toBe(before.restarts + 1);
    expect(after.lastError).toMatch(/killed by SIGKILL/);
    expect(logs.some((line) => /restarting llama-server in \d+ ms \(supervised restart 1\)/.test(line))).toBe(
      true,
    );
    expect((await chat(proxy.url)).status).toBe(200);
  });

  it("reports a SIGSTOPped llama-server unhealthy, kills it and restarts it", async () => {
    const before = (await health(proxy.url, KEY)).backend.detail;
    const pid = before.pid as number;
    const unhealthyLines = () =>
      logs.filter((line) => /^error: .*failed 2 liveness probes in a row/.test(line));
    expect(unhealthyLines()).toEqual([]);
    process.kill(pid, "SIGSTOP");
    try {
      let after = before;
      await waitUntil(async () => {
        after = (await health(proxy.url, KEY)).backend.detail;
        return after.status === "healthy" && after.pid !== pid;
      }, "the stopped llama-server replaced by a healthy one");
      reaper.add(after.pid);
      expect(unhealthyLines()).toHaveLength(1);
      expect(unhealthyLines()[0]).toMatch(/GET \/health, last: no answer within 500 ms/);
      expect(after.lastError).toMatch(/liveness probes/);
      expect(after.restarts).toBe(before.restarts + 1);
      expect(isAlive(pid)).toBe(false);
      expect((await chat(proxy.url)).status).toBe(200);
    } finally {
      if (isAlive(pid)) process.kill(pid, "SIGCONT");
    }
  });
});

describe("managed llama-server: giving up", () => {
  let proxy: RunningProxy;

  beforeAllOrFail(async () => {
    ({ proxy } = await managedProxy({ maxRestarts: 1, backoffMs: 100, probeIntervalMs: 0 }));
  }, 900_000);

  afterAll(async () => {
    await proxy?.close();
    reaper.killAll();
  });

  it("after the last allowed restart fails too, the proxy answers 503 saying the server gave up", async () => {
    const first = (await health(proxy.url, KEY)).backend.detail.pid as number;
    reaper.add(first);
    process.kill(first, "SIGKILL");
    let second: number | null = null;
    await waitUntil(async () => {
      const detail = (await health(proxy.url, KEY)).backend.detail;
      second = detail.status === "healthy" && detail.pid !== first ? detail.pid : null;
      return second !== null;
    }, "the one allowed restart");
    reaper.add(second);
    process.kill(second as unknown as number, "SIGKILL");
    await waitUntil(
      async () => (await health(proxy.url, KEY)).backend.detail.status === "failed",
      "the manager to give up",
    );
    const response = await chat(proxy.url);
    expect(response.status).toBe(503);
    const body = (await response.json()) as { error: { message: string } };
    expect(body.error.message).toMatch(/managed llama-server is failed: llama-server gave up/);
    expect(body.error.message).toMatch(/1 restart\(s\) within 600 s/);
    const open = await health(proxy.url);
    expect(open).toMatchObject({
      status: "degraded",
      backend: { detail: { status: "failed", restarts: 1 } },
    });
  });
});

describe("forge proxy --backend llamaserver killed with SIGKILL", () => {
  afterAll(() => reaper.killAll());

  it("leaves no llama-server behind", async () => {
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
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.once("exit", (_, signal) => resolve(signal)),
    );
    let pid: number | null = null;
    try {
      const listening = /listening on (http:\/\/127\.0\.0\.1:\d+)/;
      await waitUntil(
        async () => {
          if (child.exitCode !== null) throw new Error(`proxy exited:\n${output()}`);
          return listening.test(output());
        },
        `the proxy to listen:\n${output()}`,
        120_000,
      );
      const url = output().match(listening)?.[1] as string;
      pid = (await health(url, KEY)).backend.detail.pid;
      reaper.add(pid);
      expect(pid !== null && isAlive(pid)).toBe(true);
    } finally {
      child.kill("SIGKILL");
    }
    expect(await exited).toBe("SIGKILL");
    await waitUntil(
      async () => !isAlive(pid as number),
      `llama-server pid ${pid} to exit with its parent`,
      10_000,
    );
    expect(isAlive(pid as number)).toBe(false);
  }, 180_000);
});
