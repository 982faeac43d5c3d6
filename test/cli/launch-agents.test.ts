/**
 * The pieces of `forge launch` that decide, without running anything: each agent's recipe (the
 * environment, arguments and config files it writes; Codex's `config.toml` read back by a real
 * TOML parser, Python's `tomllib`), the operands, the exit status and the `PATH` lookup.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AGENT_RECIPES,
  claudeRecipe,
  codexConfigToml,
  codexRecipe,
  findAgentRecipe,
  genericPlan,
  type LaunchContext,
  opencodeRecipe,
  piRecipe,
  qwenRecipe,
} from "../../src/cli/launch/agents.ts";
import { agentEnv, configRoot } from "../../src/cli/launch/launch.ts";
import { exitStatusOf, findExecutable } from "../../src/cli/launch/run-agent.ts";
import { launchTargetOf } from "../../src/cli/launch-command.ts";

const context: LaunchContext = {
  proxyUrl: "http://127.0.0.1:40123",
  apiKey: "forge-run-key",
  model: "qwen3-8b",
  configDir: "/tmp/forge-launch-abc",
};

/** `toml` parsed by Python's standard TOML reader, as JSON. */
function parseToml(toml: string): Record<string, unknown> {
  const script = "import json, sys, tomllib; print(json.dumps(tomllib.loads(sys.stdin.read())))";
  return JSON.parse(execFileSync("python3", ["-c", script], { input: toml, encoding: "utf8" }));
}

describe("agent recipes", () => {
  it("claude: Anthropic base URL, a Bearer token, every model alias local, telemetry and updates off", () => {
    const plan = claudeRecipe.plan(context);
    expect(plan.env).toEqual({
      ANTHROPIC_BASE_URL: "http://127.0.0.1:40123",
      ANTHROPIC_AUTH_TOKEN: "forge-run-key",
      ANTHROPIC_MODEL: "qwen3-8b",
      ANTHROPIC_DEFAULT_OPUS_MODEL: "qwen3-8b",
      ANTHROPIC_DEFAULT_SONNET_MODEL: "qwen3-8b",
      ANTHROPIC_DEFAULT_HAIKU_MODEL: "qwen3-8b",
      ANTHROPIC_SMALL_FAST_MODEL: "qwen3-8b",
      CLAUDE_CODE_SUBAGENT_MODEL: "qwen3-8b",
      CLAUDE_CODE_WORKFLOW_SUBAGENT_MODEL: "qwen3-8b",
      ANTHROPIC_DEFAULT_FABLE_MODEL: "qwen3-8b",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_TELEMETRY: "1",
      DISABLE_AUTOUPDATER: "1",
      DISABLE_ERROR_REPORTING: "1",
      ENABLE_TOOL_SEARCH: "false",
    });
    expect(plan.files).toEqual({});
    expect(plan.args).toEqual([]);
    // The user's own key neither wins over the run's token nor reaches the proxy.
    const env = agentEnv(plan, {
      ANTHROPIC_API_KEY: "sk-ant-user",
      ANTHROPIC_BASE_URL: "https://x",
      HOME: "/h",
    });
    expect(env.ANTHROPIC_API_KEY).toBeUndefined();
    expect(env.ANTHROPIC_BASE_URL).toBe("http://127.0.0.1:40123");
    expect(env.HOME).toBe("/h");
  });

  it("codex: CODEX_HOME holds a config.toml that TOML parses to a forge provider on the Responses route", () => {
    const plan = codexRecipe.plan(context);
    expect(plan.env).toEqual({ CODEX_HOME: "/tmp/forge-launch-abc", FORGE_API_KEY: "forge-run-key" });
    expect(Object.keys(plan.files)).toEqual(["config.toml"]);
    expect(parseToml(plan.files["config.toml"] as string)).toEqual({
      model: "qwen3-8b",
      model_provider: "forge",
      check_for_update_on_startup: false,
      analytics: { enabled: false },
      model_providers: {
        forge: {
          name: "forge",
          base_url: "http://127.0.0.1:40123/v1",
          wire_api: "responses",
          env_key: "FORGE_API_KEY",
        },
      },
    });
  });

  it("codex: a model name with quotes, backslashes and control characters survives the TOML", () => {
    const model = 'a "quoted" \\ name\twith\u007f odd characters';
    expect(parseToml(codexConfigToml({ proxyUrl: context.proxyUrl, model })).model).toBe(model);
  });

  it("opencode: OPENCODE_CONFIG names a JSON config with an openai-compatible forge provider, its model the default", () => {
    const plan = opencodeRecipe.plan(context);
    expect(plan.env).toEqual({
      OPENCODE_CONFIG: "/tmp/forge-launch-abc/opencode.json",
      FORGE_API_KEY: "forge-run-key",
      OPENCODE_DISABLE_AUTOUPDATE: "1",
      OPENCODE_DISABLE_MODELS_FETCH: "1",
    });
    expect(JSON.parse(plan.files["opencode.json"] as string)).toEqual({
      $schema: "https://opencode.ai/config.json",
      provider: {
        forge: {
          npm: "@ai-sdk/openai-compatible",
          name: "forge proxy",
          options: { baseURL: "http://127.0.0.1:40123/v1", apiKey: "{env:FORGE_API_KEY}" },
          models: { "qwen3-8b": { name: "qwen3-8b", tool_call: true } },
        },
      },
      model: "forge/qwen3-8b",
      small_model: "forge/qwen3-8b",
      autoupdate: false,
      share: "disabled",
    });
  });

  it("qwen: the OpenAI variables, --auth-type openai first, statistics, telemetry and update check off", () => {
    const plan = qwenRecipe.plan(context);
    expect(plan.env).toEqual({
      OPENAI_BASE_URL: "http://127.0.0.1:40123/v1",
      OPENAI_API_KEY: "forge-run-key",
      OPENAI_MODEL: "qwen3-8b",
      QWEN_USAGE_STATISTICS_ENABLED: "false",
      QWEN_TELEMETRY_ENABLED: "false",
      QWEN_CODE_SKIP_UPDATE_CHECK_ONCE: "true",
      QWEN_CODE_DISABLE_PRECONNECT: "1",
    });
    expect(plan.args).toEqual(["--auth-type", "openai"]);
    expect(plan.files).toEqual({});
  });

  it("pi: PI_CODING_AGENT_DIR holds models.json (a forge provider on chat completions) and settings.json making it the default", () => {
    const plan = piRecipe.plan(context);
    expect(plan.env).toEqual({
      PI_CODING_AGENT_DIR: "/tmp/forge-launch-abc",
      FORGE_API_KEY: "forge-run-key",
      PI_OFFLINE: "1",
      PI_SKIP_VERSION_CHECK: "1",
      PI_TELEMETRY: "0",
    });
    expect(plan.args).toEqual([]);
    expect(JSON.parse(plan.files["models.json"] as string)).toEqual({
      providers: {
        forge: {
          baseUrl: "http://127.0.0.1:40123/v1",
          api: "openai-completions",
          apiKey: "FORGE_API_KEY",
          compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
          models: [{ id: "qwen3-8b", name: "qwen3-8b" }],
        },
      },
    });
    expect(JSON.parse(plan.files["settings.json"] as string)).toEqual({
      defaultProvider: "forge",
      defaultModel: "qwen3-8b",
    });
  });

  it("generic: OpenAI and Anthropic base URLs with the run's key as both keys", () => {
    const plan = genericPlan(context);
    expect(plan.env).toMatchObject({
      OPENAI_BASE_URL: "http://127.0.0.1:40123/v1",
      OPENAI_API_BASE: "http://127.0.0.1:40123/v1",
      OPENAI_API_KEY: "forge-run-key",
      ANTHROPIC_BASE_URL: "http://127.0.0.1:40123",
      ANTHROPIC_API_KEY: "forge-run-key",
      FORGE_PROXY_URL: "http://127.0.0.1:40123",
      FORGE_MODEL: "qwen3-8b",
    });
    expect(agentEnv(plan, { ANTHROPIC_AUTH_TOKEN: "user-token" }).ANTHROPIC_AUTH_TOKEN).toBeUndefined();
  });

  it("the table: one entry per agent, each with a binary and an npm package; lookups are own names only", () => {
    expect(Object.keys(AGENT_RECIPES)).toEqual(["claude", "codex", "opencode", "qwen", "pi"]);
    for (const [name, recipe] of Object.entries(AGENT_RECIPES)) {
      expect(recipe.name).toBe(name);
      expect(recipe.binary).toMatch(/^[a-z]+$/);
      expect(recipe.npmPackage).toMatch(/^(@[a-z-]+\/)?[a-z-]+$/);
    }
    expect(findAgentRecipe("codex")).toBe(codexRecipe);
    expect(findAgentRecipe("toString")).toBeUndefined();
    expect(findAgentRecipe("__proto__")).toBeUndefined();
  });
});

describe("agentEnv and configRoot", () => {
  it("keeps the user's variables, and adds the loopback names to NO_PROXY so an HTTP proxy is not asked", () => {
    const plan = {
      env: { OPENAI_BASE_URL: "http://127.0.0.1:1/v1" },
      unsetEnv: ["GONE"],
      args: [],
      files: {},
    };
    const env = agentEnv(plan, {
      PATH: "/bin",
      GONE: "x",
      NO_PROXY: "corp.example,localhost",
      HTTPS_PROXY: "http://p:3128",
    });
    expect(env).toEqual({
      PATH: "/bin",
      HTTPS_PROXY: "http://p:3128",
      OPENAI_BASE_URL: "http://127.0.0.1:1/v1",
      NO_PROXY: "corp.example,localhost,127.0.0.1,::1",
      no_proxy: "127.0.0.1,localhost,::1",
    });
  });

  it("makes the config directory in $XDG_RUNTIME_DIR when it is a directory, else in the temporary folder", () => {
    const folder = mkdtempSync(join(tmpdir(), "forge-runtime-"));
    try {
      expect(configRoot({ XDG_RUNTIME_DIR: folder })).toBe(folder);
      expect(configRoot({ XDG_RUNTIME_DIR: join(folder, "absent") })).toBe(tmpdir());
      expect(configRoot({ XDG_RUNTIME_DIR: "relative/path" })).toBe(tmpdir());
      expect(configRoot({})).toBe(tmpdir());
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

describe("launchTargetOf", () => {
  it("an agent named before --, with the arguments after it", () => {
    expect(launchTargetOf(["codex", "exec", "hi"], ["exec", "hi"])).toEqual({
      target: { kind: "agent", recipe: codexRecipe },
      args: ["exec", "hi"],
    });
    expect(launchTargetOf(["claude"], undefined)).toEqual({
      target: { kind: "agent", recipe: claudeRecipe },
      args: [],
    });
  });

  it("a command after -- runs as it is, even when it is an agent's name", () => {
    expect(launchTargetOf(["node", "agent.mjs", "-x"], ["node", "agent.mjs", "-x"])).toEqual({
      target: { kind: "command", file: "node" },
      args: ["agent.mjs", "-x"],
    });
    expect(launchTargetOf(["claude"], ["claude"])).toEqual({
      target: { kind: "command", file: "claude" },
      args: [],
    });
  });

  it("nothing, or an unknown agent before --, is an error naming the way out", () => {
    expect(launchTargetOf([], undefined)).toEqual({
      error: expect.stringContaining("forge launch -- <command>"),
    });
    expect(launchTargetOf(["claud"], undefined)).toEqual({
      error: expect.stringContaining("unknown agent 'claud': one of claude, codex, opencode, qwen, pi"),
    });
  });
});

describe("exitStatusOf", () => {
  it("the agent's code; 128 + n for signal n; 127 not installed; 126 not executable", () => {
    expect(exitStatusOf({ kind: "exited", exitCode: 0 })).toBe(0);
    expect(exitStatusOf({ kind: "exited", exitCode: 3 })).toBe(3);
    expect(exitStatusOf({ kind: "signaled", signal: "SIGINT" })).toBe(130);
    expect(exitStatusOf({ kind: "signaled", signal: "SIGTERM" })).toBe(143);
    expect(exitStatusOf({ kind: "signaled", signal: "SIGKILL" })).toBe(137);
    expect(exitStatusOf({ kind: "not_found" })).toBe(127);
    expect(exitStatusOf({ kind: "not_executable" })).toBe(126);
  });
});

describe.skipIf(process.platform === "win32")("findExecutable", () => {
  let folder: string;
  beforeAll(() => {
    folder = mkdtempSync(join(tmpdir(), "forge-find-"));
    writeFileSync(join(folder, "runnable"), "#!/bin/sh\n");
    chmodSync(join(folder, "runnable"), 0o755);
    writeFileSync(join(folder, "plain"), "not a program");
    chmodSync(join(folder, "plain"), 0o644);
  });
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  it("looks a bare name up on PATH, and takes a name with a slash as a path", () => {
    const env = { PATH: `/nonexistent-folder:${folder}` };
    expect(findExecutable("runnable", env)).toBe("found");
    expect(findExecutable("plain", env)).toBe("not_executable");
    expect(findExecutable("absent", env)).toBe("missing");
    expect(findExecutable("runnable", { PATH: "/nonexistent-folder" })).toBe("missing");
    expect(findExecutable(join(folder, "runnable"), {})).toBe("found");
    expect(findExecutable(join(folder, "plain"), {})).toBe("not_executable");
    expect(findExecutable(folder, {})).toBe("missing");
  });
});
