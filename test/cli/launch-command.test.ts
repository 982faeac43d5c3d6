/**
 * `forge launch` as a user runs it (from the sources), with real child processes and sockets on
 * 127.0.0.1: fake agents on a temporary PATH reach a scripted backend through the proxy forge
 * starts for them, with the config their recipe wrote; forge exits with their status, passes
 * SIGTERM on, and afterwards the proxy's port is closed and the temporary config is gone.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configRoot } from "../../src/cli/launch/launch.ts";
import { exitOf, spawnForge } from "../helpers/forge-cli.ts";
import {
  type ScriptedBackend,
  startScriptedBackend,
  textCompletion,
} from "../proxy/helpers/scripted-backend.ts";
import { installFakeAgents, readDump } from "./helpers/fake-agent.ts";

const AGENTS = ["claude", "codex", "opencode", "qwen", "pi"] as const;

let backend: ScriptedBackend;
let folder: string;
let binDir: string;
let runs = 0;

beforeAll(async () => {
  backend = await startScriptedBackend([], { fallback: textCompletion("hello from the backend") });
  folder = mkdtempSync(join(tmpdir(), "forge-launch-test-"));
  binDir = join(folder, "bin");
  mkdirSync(binDir);
  installFakeAgents(binDir, [...AGENTS, "my-agent"]);
});

afterAll(async () => {
  await backend.close();
  rmSync(folder, { recursive: true, force: true });
});

/** Run `forge launch <args>` with the fake agents first on PATH; resolves with its exit code and output. */
async function launch(args: string[], env: NodeJS.ProcessEnv = {}) {
  const dumpPath = join(folder, `dump-${++runs}.json`);
  const run = spawnForge(["launch", ...args], {
    ...process.env,
    PATH: `${binDir}:${process.env.PATH ?? ""}`,
    FAKE_DUMP: dumpPath,
    FORGE_DEBUG: "",
    ...env,
  });
  return { run, dumpPath, exit: exitOf(run.child) };
}

/** Whether something still accepts connections on `url`'s port. */
function accepts(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

async function waitForFile(path: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(path)) {
    if (Date.now() > deadline) throw new Error(`no ${path} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const errorLines = (text: string) => text.split("\n").filter((line) => line.trim() !== "");

describe("forge launch -- <command>", () => {
  it("runs the command against the proxy and exits with its status; the port closes after", async () => {
    const logFile = join(folder, "proxy.log");
    const { run, dumpPath, exit } = await launch(
      ["--backend-url", `${backend.url}/v1`, "--log-file", logFile, "--", "my-agent", "--flag", "value"],
      { FAKE_MODE: "exit:3", OPENAI_BASE_URL: "https://api.openai.com/v1", USER_SETTING: "kept" },
    );
    expect(await exit, run.output()).toBe(3);
    const dump = readDump(dumpPath);
    expect(dump.error).toBeUndefined();
    expect(dump.argv).toEqual(["--flag", "value"]);
    expect(dump.status).toBe(200);
    expect(dump.text).toBe("hello from the backend");
    const proxyUrl = dump.env.FORGE_PROXY_URL as string;
    expect(proxyUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(dump.env).toMatchObject({
      OPENAI_BASE_URL: `${proxyUrl}/v1`,
      OPENAI_API_BASE: `${proxyUrl}/v1`,
      ANTHROPIC_BASE_URL: proxyUrl,
      FORGE_MODEL: "scripted-model",
      USER_SETTING: "kept",
    });
    expect(dump.env.OPENAI_API_KEY).toBe(dump.env.ANTHROPIC_API_KEY);
    // The request went through the proxy to the backend, with the model the backend lists.
    expect(backend.chatRequests.at(-1)?.body.model).toBe("scripted-model");
    expect(await accepts(proxyUrl)).toBe(false);
    expect(readFileSync(logFile, "utf8")).toMatch(/method=POST path=\/v1\/chat\/completions status=200/);
    expect(run.stdout()).toBe("");
    expect(run.stderr()).toContain(`forge launch: my-agent → ${proxyUrl} (model scripted-model)`);
  });

  it("passes SIGTERM on to the command, exits with its status and closes the proxy", async () => {
    const { run, dumpPath, exit } = await launch(["--backend-url", `${backend.url}/v1`, "--", "my-agent"], {
      FAKE_MODE: "wait-signal",
    });
    await waitForFile(`${dumpPath}.ready`);
    const proxyUrl = readDump(dumpPath).proxyUrl as string;
    expect(await accepts(proxyUrl)).toBe(true);
    run.child.kill("SIGTERM");
    expect(await exit, run.output()).toBe(42);
    expect(readDump(dumpPath).signal).toBe("SIGTERM");
    expect(await accepts(proxyUrl)).toBe(false);
  });

  it("says a missing command in one line and exits 127", async () => {
    const { run, exit } = await launch(["--backend-url", `${backend.url}/v1`, "--", "no-such-command-here"]);
    expect(await exit).toBe(127);
    expect(errorLines(run.stderr())).toEqual(["forge: no-such-command-here: command not found"]);
  });
});

describe("forge launch <agent>", () => {
  it.each(AGENTS)(
    "%s reaches the backend through the proxy with the config its recipe wrote",
    async (agent) => {
      const { run, dumpPath, exit } = await launch(
        [agent, "--backend-url", `${backend.url}/v1`, "--", "--some-flag"],
        { ANTHROPIC_API_KEY: "the-user's-own-key" },
      );
      expect(await exit, run.output()).toBe(0);
      const dump = readDump(dumpPath);
      expect(dump.error).toBeUndefined();
      expect(dump.status).toBe(200);
      expect(dump.text).toBe("hello from the backend");
      expect(dump.argv.at(-1)).toBe("--some-flag");
      const proxyUrl = dump.proxyUrl as string;
      expect(proxyUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(await accepts(proxyUrl)).toBe(false);
      if (dump.configDir !== null) {
        expect(dump.configDir.startsWith(join(configRoot(process.env), "forge-launch-"))).toBe(true);
        expect(existsSync(dump.configDir)).toBe(false);
      }
      switch (agent) {
        case "claude":
          expect(dump.env.ANTHROPIC_BASE_URL).toBe(proxyUrl);
          expect(dump.env.ANTHROPIC_MODEL).toBe("scripted-model");
          expect(dump.env.ANTHROPIC_API_KEY).toBeUndefined();
          expect(dump.env).toMatchObject({
            DISABLE_TELEMETRY: "1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
          });
          break;
        case "codex":
          expect(dump.files["config.toml"]).toContain('wire_api = "responses"');
          expect(dump.files["config.toml"]).toContain(`base_url = "${proxyUrl}/v1"`);
          break;
        case "opencode":
          expect(JSON.parse(dump.files["opencode.json"] ?? "{}")).toMatchObject({
            model: "forge/scripted-model",
            provider: { forge: { npm: "@ai-sdk/openai-compatible", options: { baseURL: `${proxyUrl}/v1` } } },
          });
          break;
        case "pi":
          expect(JSON.parse(dump.files["models.json"] ?? "{}")).toMatchObject({
            providers: {
              forge: { baseUrl: `${proxyUrl}/v1`, api: "openai-completions", apiKey: "FORGE_API_KEY" },
            },
          });
          expect(JSON.parse(dump.files["settings.json"] ?? "{}")).toEqual({
            defaultProvider: "forge",
            defaultModel: "scripted-model",
          });
          break;
        case "qwen":
          expect(dump.argv).toEqual(["--auth-type", "openai", "--some-flag"]);
          expect(dump.env).toMatchObject({
            OPENAI_BASE_URL: `${proxyUrl}/v1`,
            OPENAI_MODEL: "scripted-model",
          });
          break;
      }
    },
  );

  it("removes the temporary config and closes the proxy when the agent crashes", async () => {
    const { run, dumpPath, exit } = await launch(["codex", "--backend-url", `${backend.url}/v1`], {
      FAKE_MODE: "crash",
    });
    expect(await exit, run.output()).toBe(128 + 9);
    const dump = readDump(dumpPath);
    expect(dump.configDir).not.toBeNull();
    expect(existsSync(dump.configDir as string)).toBe(false);
    expect(await accepts(dump.proxyUrl as string)).toBe(false);
  });

  it("names the npm package of a missing agent in one line, exits 127 and starts no proxy", async () => {
    const { run, exit } = await launch(["claude", "--backend-url", `${backend.url}/v1`], {
      PATH: join(folder, "empty"),
    });
    expect(await exit).toBe(127);
    expect(errorLines(run.stderr())).toEqual([
      "forge: Claude Code (claude) is not installed: npm install -g @anthropic-ai/claude-code",
    ]);
    expect(run.output()).not.toContain("listening");
  });

  it("exits 2 on a usage error: no agent, an unknown one, no backend", async () => {
    const runs = [
      {
        args: ["--backend-url", backend.url],
        message: /name an agent \(claude, codex, opencode, qwen, pi\)/,
      },
      {
        args: ["claud", "--backend-url", backend.url],
        message: /unknown agent 'claud'.*forge launch \[options\] -- claud/,
      },
      { args: ["codex"], message: /--backend-url: give either --backend-url/ },
      { args: ["codex", "--backend-url", backend.url, "--resume"], message: /unknown option '--resume'/ },
    ];
    const started = await Promise.all(
      runs.map(async ({ args, message }) => ({ ...(await launch(args)), message })),
    );
    for (const { run, exit, message } of started) {
      expect(await exit, run.output()).toBe(2);
      expect(run.stderr()).toMatch(message);
    }
  });
});
