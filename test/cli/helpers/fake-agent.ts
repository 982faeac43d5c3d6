/**
 * Fake coding agents for `forge launch` tests: one node script, installed on a temporary PATH
 * under each agent's binary name. It records its arguments, the environment variables and the
 * config file the recipe gave it, then makes one real request through the proxy the way that agent
 * would (Anthropic Messages for claude, Responses for codex, chat completions for the others),
 * reading the address and key from that config. `FAKE_MODE` picks how it ends: `exit:<n>`,
 * `wait-signal` (exits 42 on SIGTERM or SIGINT, after writing `<dump>.ready`), `crash` (SIGKILLs itself).
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const SCRIPT = String.raw`
const { readFileSync, writeFileSync } = require("node:fs");
const { basename, dirname } = require("node:path");
const name = basename(process.argv[1]);
const env = process.env;
const dump = { name, argv: process.argv.slice(2), env: {}, files: {}, configDir: null };
const WATCHED = [
  "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY", "ANTHROPIC_MODEL",
  "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL",
  "ANTHROPIC_SMALL_FAST_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL",
  "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_TELEMETRY", "DISABLE_AUTOUPDATER", "DISABLE_ERROR_REPORTING",
  "CODEX_HOME", "FORGE_API_KEY", "OPENCODE_CONFIG", "OPENCODE_DISABLE_AUTOUPDATE", "OPENCODE_DISABLE_MODELS_FETCH",
  "OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_API_KEY", "OPENAI_MODEL", "QWEN_USAGE_STATISTICS_ENABLED",
  "QWEN_TELEMETRY_ENABLED", "QWEN_CODE_SKIP_UPDATE_CHECK_ONCE", "QWEN_CODE_DISABLE_PRECONNECT",
  "FORGE_PROXY_URL", "FORGE_MODEL", "USER_SETTING",
];
for (const key of WATCHED) if (env[key] !== undefined) dump.env[key] = env[key];

function request() {
  const json = { "content-type": "application/json" };
  if (name === "claude") {
    return {
      url: env.ANTHROPIC_BASE_URL + "/v1/messages",
      headers: { ...json, authorization: "Bearer " + env.ANTHROPIC_AUTH_TOKEN, "anthropic-version": "2023-06-01" },
      body: { model: env.ANTHROPIC_MODEL, max_tokens: 64, messages: [{ role: "user", content: "hi" }] },
      text: (answer) => answer.content[0].text,
    };
  }
  if (name === "codex") {
    const toml = readFileSync(env.CODEX_HOME + "/config.toml", "utf8");
    dump.files["config.toml"] = toml;
    dump.configDir = env.CODEX_HOME;
    const value = (key) => JSON.parse(toml.match(new RegExp("^" + key + " = (.*)$", "m"))[1]);
    return {
      url: value("base_url") + "/responses",
      headers: { ...json, authorization: "Bearer " + env[value("env_key")] },
      body: { model: value("model"), input: "hi", store: false },
      text: (answer) => answer.output.find((item) => item.type === "message").content[0].text,
    };
  }
  if (name === "pi") {
    const text = readFileSync(env.PI_CODING_AGENT_DIR + "/models.json", "utf8");
    dump.files["models.json"] = text;
    dump.files["settings.json"] = readFileSync(env.PI_CODING_AGENT_DIR + "/settings.json", "utf8");
    dump.configDir = env.PI_CODING_AGENT_DIR;
    const provider = JSON.parse(text).providers.forge;
    return {
      url: provider.baseUrl + "/chat/completions",
      headers: { ...json, authorization: "Bearer " + env[provider.apiKey] },
      body: { model: provider.models[0].id, messages: [{ role: "user", content: "hi" }] },
      text: (answer) => answer.choices[0].message.content,
    };
  }
  if (name === "opencode") {
    const text = readFileSync(env.OPENCODE_CONFIG, "utf8");
    dump.files["opencode.json"] = text;
    dump.configDir = dirname(env.OPENCODE_CONFIG);
    const config = JSON.parse(text);
    const options = config.provider.forge.options;
    const keyVariable = options.apiKey.match(/^\{env:(.+)\}$/)[1];
    return {
      url: options.baseURL + "/chat/completions",
      headers: { ...json, authorization: "Bearer " + env[keyVariable] },
      body: { model: config.model.slice("forge/".length), messages: [{ role: "user", content: "hi" }] },
      text: (answer) => answer.choices[0].message.content,
    };
  }
  return {
    url: env.OPENAI_BASE_URL + "/chat/completions",
    headers: { ...json, authorization: "Bearer " + env.OPENAI_API_KEY },
    body: { model: env.OPENAI_MODEL ?? env.FORGE_MODEL, messages: [{ role: "user", content: "hi" }] },
    text: (answer) => answer.choices[0].message.content,
  };
}

(async () => {
  try {
    const call = request();
    dump.proxyUrl = new URL(call.url).origin;
    const response = await fetch(call.url, { method: "POST", headers: call.headers, body: JSON.stringify(call.body) });
    dump.status = response.status;
    const answer = await response.json();
    dump.text = response.ok ? call.text(answer) : JSON.stringify(answer);
  } catch (error) {
    dump.error = String(error && error.stack || error);
  }
  const write = () => writeFileSync(env.FAKE_DUMP, JSON.stringify(dump));
  write();
  const mode = env.FAKE_MODE ?? "exit:0";
  if (mode.startsWith("exit:")) process.exit(Number(mode.slice(5)));
  if (mode === "crash") process.kill(process.pid, "SIGKILL");
  if (mode === "wait-signal") {
    const stop = (signal) => {
      dump.signal = signal;
      write();
      process.exit(42);
    };
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
    setInterval(() => {}, 1000);
    writeFileSync(env.FAKE_DUMP + ".ready", "");
  }
})();
`;

/** What a fake agent recorded. */
export interface FakeAgentDump {
  name: string;
  argv: string[];
  env: Record<string, string>;
  files: Record<string, string>;
  configDir: string | null;
  proxyUrl?: string;
  status?: number;
  text?: string;
  error?: string;
  signal?: string;
}

/** Install the fake agent in `binDir` as each of `names` (executable, run by this node). */
export function installFakeAgents(binDir: string, names: readonly string[]): void {
  for (const name of names) {
    const path = join(binDir, name);
    writeFileSync(path, `#!${process.execPath}\n${SCRIPT}`);
    chmodSync(path, 0o755);
  }
}

/** What the fake agent wrote to `dumpPath`; throws when it wrote nothing. */
export function readDump(dumpPath: string): FakeAgentDump {
  if (!existsSync(dumpPath)) throw new Error(`the fake agent wrote no ${dumpPath}`);
  return JSON.parse(readFileSync(dumpPath, "utf8")) as FakeAgentDump;
}
