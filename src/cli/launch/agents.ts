/**
 * The coding agents `forge launch` knows, as a table: each recipe names the agent's binary and npm
 * package and says, as a pure function of the proxy's address, key and model, which environment
 * variables, leading arguments and config files (in a temporary directory) point the agent at the
 * proxy for one run. Adding an agent is adding an entry.
 */

/** What a recipe is given: the running proxy and where its config files will lie. */
export interface LaunchContext {
  /** The proxy's base URL, e.g. `http://127.0.0.1:40123` (OpenAI clients add `/v1`). */
  proxyUrl: string;
  /** The key the proxy requires for this run (Bearer or `x-api-key`). */
  apiKey: string;
  /** The model name the agent sends. */
  model: string;
  /** A fresh directory, removed when the agent exits; `files` are written under it. */
  configDir: string;
}

/** What a recipe sets for one run. */
export interface LaunchPlan {
  /** Set in the agent's environment, over the user's own values. */
  env: Record<string, string>;
  /** Removed from the agent's environment (credentials the agent would otherwise prefer). */
  unsetEnv: string[];
  /** Put before the user's arguments. */
  args: string[];
  /** Config files to write, by path relative to `configDir`. */
  files: Record<string, string>;
}

/** One agent `forge launch` can start. */
export interface AgentRecipe {
  /** The name on the command line: `forge launch <name>`. */
  name: string;
  /** What it is, for `--help` and errors. */
  title: string;
  /** The executable looked up on `PATH`. */
  binary: string;
  /** The npm package that installs `binary` (named when it is missing). */
  npmPackage: string;
  /** The environment, arguments and files that point it at the proxy for this run. */
  plan(context: LaunchContext): LaunchPlan;
}

/** The environment variable that carries the run's key to agents that read it by name. */
export const LAUNCH_API_KEY_ENV = "FORGE_API_KEY";

const openaiUrl = (context: Pick<LaunchContext, "proxyUrl">) => `${context.proxyUrl}/v1`;

/**
 * Claude Code speaks the Anthropic Messages API: `ANTHROPIC_BASE_URL` and a Bearer token
 * (`ANTHROPIC_AUTH_TOKEN`, which it sends without asking to approve a new key); the user's
 * `ANTHROPIC_API_KEY` is removed so it is neither preferred nor sent to the proxy. Every model
 * alias maps to the local model.
 */
export const claudeRecipe: AgentRecipe = {
  name: "claude",
  title: "Claude Code",
  binary: "claude",
  npmPackage: "@anthropic-ai/claude-code",
  plan: (context) => ({
    env: {
      ANTHROPIC_BASE_URL: context.proxyUrl,
      ANTHROPIC_AUTH_TOKEN: context.apiKey,
      ANTHROPIC_MODEL: context.model,
      ANTHROPIC_DEFAULT_OPUS_MODEL: context.model,
      ANTHROPIC_DEFAULT_SONNET_MODEL: context.model,
      ANTHROPIC_DEFAULT_HAIKU_MODEL: context.model,
      ANTHROPIC_SMALL_FAST_MODEL: context.model,
      CLAUDE_CODE_SUBAGENT_MODEL: context.model,
      CLAUDE_CODE_WORKFLOW_SUBAGENT_MODEL: context.model,
      ANTHROPIC_DEFAULT_FABLE_MODEL: context.model,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_TELEMETRY: "1",
      DISABLE_AUTOUPDATER: "1",
      DISABLE_ERROR_REPORTING: "1",
      // Tool search (2.1.3xx) sends deferred tools and `tool_reference` results the proxy cannot serve.
      ENABLE_TOOL_SEARCH: "false",
    },
    unsetEnv: ["ANTHROPIC_API_KEY"],
    args: [],
    files: {},
  }),
};

/**
 * Codex CLI reads `$CODEX_HOME/config.toml`: a `forge` model provider on the proxy's Responses
 * route (`wire_api = "responses"`, the only one current Codex accepts), its key in
 * `FORGE_API_KEY`, update checks and analytics off.
 */
export const codexRecipe: AgentRecipe = {
  name: "codex",
  title: "Codex CLI",
  binary: "codex",
  npmPackage: "@openai/codex",
  plan: (context) => ({
    env: { CODEX_HOME: context.configDir, [LAUNCH_API_KEY_ENV]: context.apiKey },
    unsetEnv: [],
    args: [],
    files: { "config.toml": codexConfigToml(context) },
  }),
};

/** The `config.toml` of `codexRecipe`. */
export function codexConfigToml(context: Pick<LaunchContext, "proxyUrl" | "model">): string {
  return [
    "# Written by forge launch for one run; removed when Codex exits.",
    `model = ${tomlString(context.model)}`,
    'model_provider = "forge"',
    "check_for_update_on_startup = false",
    "",
    "[analytics]",
    "enabled = false",
    "",
    "[model_providers.forge]",
    'name = "forge"',
    `base_url = ${tomlString(`${context.proxyUrl}/v1`)}`,
    'wire_api = "responses"',
    `env_key = "${LAUNCH_API_KEY_ENV}"`,
    "",
  ].join("\n");
}

/**
 * opencode reads the extra config file named by `OPENCODE_CONFIG`: an `@ai-sdk/openai-compatible`
 * provider `forge` on the proxy's chat-completions route, its model the default, autoupdate and
 * sharing off.
 */
export const opencodeRecipe: AgentRecipe = {
  name: "opencode",
  title: "opencode",
  binary: "opencode",
  npmPackage: "opencode-ai",
  plan: (context) => ({
    env: {
      OPENCODE_CONFIG: `${context.configDir}/opencode.json`,
      [LAUNCH_API_KEY_ENV]: context.apiKey,
      OPENCODE_DISABLE_AUTOUPDATE: "1",
      OPENCODE_DISABLE_MODELS_FETCH: "1",
    },
    unsetEnv: [],
    args: [],
    files: { "opencode.json": `${JSON.stringify(opencodeConfig(context), null, 2)}\n` },
  }),
};

/** The `opencode.json` of `opencodeRecipe`. */
export function opencodeConfig(context: Pick<LaunchContext, "proxyUrl" | "model">): Record<string, unknown> {
  return {
    $schema: "https://opencode.ai/config.json",
    provider: {
      forge: {
        npm: "@ai-sdk/openai-compatible",
        name: "forge proxy",
        options: { baseURL: openaiUrl(context), apiKey: `{env:${LAUNCH_API_KEY_ENV}}` },
        models: { [context.model]: { name: context.model, tool_call: true } },
      },
    },
    model: `forge/${context.model}`,
    small_model: `forge/${context.model}`,
    autoupdate: false,
    share: "disabled",
  };
}

/**
 * Qwen Code's OpenAI auth reads `OPENAI_BASE_URL`, `OPENAI_API_KEY` and `OPENAI_MODEL`;
 * `--auth-type openai` skips the sign-in dialog; usage statistics, telemetry, the update check
 * and the API preconnect are off.
 */
export const qwenRecipe: AgentRecipe = {
  name: "qwen",
  title: "Qwen Code",
  binary: "qwen",
  npmPackage: "@qwen-code/qwen-code",
  plan: (context) => ({
    env: {
      OPENAI_BASE_URL: openaiUrl(context),
      OPENAI_API_KEY: context.apiKey,
      OPENAI_MODEL: context.model,
      QWEN_USAGE_STATISTICS_ENABLED: "false",
      QWEN_TELEMETRY_ENABLED: "false",
      QWEN_CODE_SKIP_UPDATE_CHECK_ONCE: "true",
      QWEN_CODE_DISABLE_PRECONNECT: "1",
    },
    unsetEnv: [],
    args: ["--auth-type", "openai"],
    files: {},
  }),
};

/**
 * pi (`@mariozechner/pi-coding-agent`) reads its config folder from `PI_CODING_AGENT_DIR`: a
 * `models.json` with a `forge` provider on the proxy's chat-completions route (its key the name
 * of the variable that holds it, `FORGE_API_KEY`; no `developer` role or `reasoning_effort`, which
 * local servers do not take) and a `settings.json` that makes it the default; update checks and
 * telemetry are off (`PI_OFFLINE`, `PI_SKIP_VERSION_CHECK`, `PI_TELEMETRY`).
 */
export const piRecipe: AgentRecipe = {
  name: "pi",
  title: "pi",
  binary: "pi",
  npmPackage: "@mariozechner/pi-coding-agent",
  plan: (context) => ({
    env: {
      PI_CODING_AGENT_DIR: context.configDir,
      [LAUNCH_API_KEY_ENV]: context.apiKey,
      PI_OFFLINE: "1",
      PI_SKIP_VERSION_CHECK: "1",
      PI_TELEMETRY: "0",
    },
    unsetEnv: [],
    args: [],
    files: {
      "models.json": `${JSON.stringify(piModels(context), null, 2)}\n`,
      "settings.json": `${JSON.stringify({ defaultProvider: "forge", defaultModel: context.model }, null, 2)}\n`,
    },
  }),
};

/** The `models.json` of `piRecipe`. */
export function piModels(context: Pick<LaunchContext, "proxyUrl" | "model">): Record<string, unknown> {
  return {
    providers: {
      forge: {
        baseUrl: openaiUrl(context),
        api: "openai-completions",
        apiKey: LAUNCH_API_KEY_ENV,
        compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
        models: [{ id: context.model, name: context.model }],
      },
    },
  };
}

/**
 * `forge launch -- <command>`: any program, given the variables OpenAI and Anthropic SDKs read
 * (`OPENAI_BASE_URL`, `OPENAI_API_BASE`, `ANTHROPIC_BASE_URL`) with the run's key as their keys,
 * plus `FORGE_PROXY_URL` and `FORGE_MODEL`.
 */
export function genericPlan(context: LaunchContext): LaunchPlan {
  return {
    env: {
      OPENAI_BASE_URL: openaiUrl(context),
      OPENAI_API_BASE: openaiUrl(context),
      OPENAI_API_KEY: context.apiKey,
      ANTHROPIC_BASE_URL: context.proxyUrl,
      ANTHROPIC_API_KEY: context.apiKey,
      FORGE_PROXY_URL: context.proxyUrl,
      FORGE_MODEL: context.model,
      [LAUNCH_API_KEY_ENV]: context.apiKey,
    },
    unsetEnv: ["ANTHROPIC_AUTH_TOKEN"],
    args: [],
    files: {},
  };
}

/** The agents `forge launch <agent>` knows, by name. */
export const AGENT_RECIPES: Readonly<Record<string, AgentRecipe>> = Object.fromEntries(
  [claudeRecipe, codexRecipe, opencodeRecipe, qwenRecipe, piRecipe].map((recipe) => [recipe.name, recipe]),
);

/** The recipe named `name`, if `forge launch` knows it. */
export function findAgentRecipe(name: string): AgentRecipe | undefined {
  return Object.hasOwn(AGENT_RECIPES, name) ? AGENT_RECIPES[name] : undefined;
}

/** A TOML basic string: JSON's escapes are TOML's; DEL, which JSON leaves raw, TOML wants escaped. */
function tomlString(value: string): string {
  return JSON.stringify(value).replaceAll("\x7f", "\\u007f");
}
