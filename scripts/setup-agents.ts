/**
 * `npm run setup:agents`: installs the real coding agents that `test/integration/coding-agents.test.ts`
 * drives through `forge launch` (Claude Code, Codex CLI, opencode, Qwen Code, pi), at the versions
 * pinned here, into `.cache/agents` — never into the project's dependencies.
 *
 * One `npm install --prefix .cache/agents` of the four packages (their native binaries come as
 * optional dependencies for the platform; Claude Code's and opencode's postinstall put them in
 * place, so install scripts run), then each binary's `--version` is checked against the pin and a
 * stamp is written: a second run finds the stamp and the binaries and does nothing. Only the npm
 * registry is reached. Progress lines go to the log; a failure throws (the test run stops; the
 * test never skips).
 */
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { execa } from "execa";
import { type ProgressLog, withDirectoryLock } from "./setup-llama-server.ts";

/** One agent installed for the tests: its binary and the npm package and version that provide it. */
export interface PinnedAgent {
  /** The executable `forge launch` looks up on `PATH`. */
  binary: string;
  npmPackage: string;
  /** The exact version (the one `docs/agents.md` records). */
  version: string;
  /** What `<binary> --version` prints for this version (a substring). */
  versionText: string;
}

/** The agents and versions the integration test drives (docs/agents.md's client table). */
export const PINNED_AGENTS: readonly PinnedAgent[] = [
  { binary: "claude", npmPackage: "@anthropic-ai/claude-code", version: "2.1.197", versionText: "2.1.197" },
  { binary: "codex", npmPackage: "@openai/codex", version: "0.171.0", versionText: "codex-cli 0.171.0" },
  { binary: "opencode", npmPackage: "opencode-ai", version: "1.18.33", versionText: "1.18.33" },
  { binary: "qwen", npmPackage: "@qwen-code/qwen-code", version: "0.15.10", versionText: "0.15.10" },
  { binary: "pi", npmPackage: "@mariozechner/pi-coding-agent", version: "0.73.1", versionText: "0.73.1" },
];

/** Thrown when the agents cannot be installed; its message says what failed. */
export class AgentSetupError extends Error {
  override name = "AgentSetupError";
}

const root = fileURLToPath(new URL("../", import.meta.url));

/** The folder the agents are installed into. */
export function agentsDir(): string {
  return join(root, ".cache", "agents");
}

/** The folder holding the agents' executables (put it first on `PATH`). */
export function agentsBinDir(): string {
  return join(agentsDir(), "node_modules", ".bin");
}

const defaultLog: ProgressLog = (line) => console.log(`[setup-agents] ${line}`);

/** The stamp's content for `agents`: the install specs, so a changed pin reinstalls. */
function stampOf(agents: readonly PinnedAgent[]): string {
  return `${JSON.stringify({ specs: agents.map(spec) }, null, 2)}\n`;
}

const spec = (agent: PinnedAgent) => `${agent.npmPackage}@${agent.version}`;

/** True when the stamp matches `agents` and every binary is in place. */
export async function areAgentsInstalled(agents: readonly PinnedAgent[] = PINNED_AGENTS): Promise<boolean> {
  const stamp = await readFile(join(agentsDir(), "stamp.json"), "utf8").catch(() => "");
  return stamp === stampOf(agents) && agents.every((agent) => existsSync(join(agentsBinDir(), agent.binary)));
}

/**
 * Installs `agents` into {@link agentsDir} unless the stamp says they are there; resolves with
 * the bin folder. Holds a lock folder, so parallel setups wait for one install.
 */
export async function setupAgents(
  options: { agents?: readonly PinnedAgent[]; log?: ProgressLog } = {},
): Promise<string> {
  const agents = options.agents ?? PINNED_AGENTS;
  const log = options.log ?? defaultLog;
  if (await areAgentsInstalled(agents)) return agentsBinDir();
  const dir = agentsDir();
  return withDirectoryLock(`${dir}.lock`, log, async () => {
    if (await areAgentsInstalled(agents)) return agentsBinDir();
    const started = Date.now();
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    // A package.json of its own, so npm never walks up to the project's; it approves the install
    // scripts that put Claude Code's and opencode's native binaries in place (npm's allowScripts).
    const allowScripts = Object.fromEntries(agents.map((agent) => [agent.npmPackage, true]));
    await writeFile(
      join(dir, "package.json"),
      `${JSON.stringify({ private: true, allowScripts }, null, 2)}\n`,
    );
    const args = [
      "install",
      "--prefix",
      dir,
      "--no-save",
      "--no-package-lock",
      // The native binaries are optional dependencies; a user or global `omit=optional` would drop them.
      "--include=optional",
      "--no-audit",
      "--no-fund",
      "--loglevel=error",
      ...agents.map(spec),
    ];
    log(`installing ${agents.map(spec).join(", ")} into ${dir} (npm ${args.slice(0, 2).join(" ")} …)`);
    const install = await execa("npm", args, { reject: false, all: true, cwd: dir });
    if (install.failed) {
      throw new AgentSetupError(
        `npm install of the coding agents failed (exit ${install.exitCode}); the npm registry must be reachable:\n${install.all ?? ""}`,
      );
    }
    log(`installed in ${seconds(started)}; checking each agent's --version`);
    // The agents may write dotfiles into HOME even for --version: a throwaway one.
    const home = await mkdtemp(join(tmpdir(), "forge-setup-agents-"));
    try {
      await checkVersions(agents, home, log);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
    await writeFile(join(dir, "stamp.json"), stampOf(agents));
    log(`ready in ${seconds(started)}: ${agentsBinDir()}`);
    return agentsBinDir();
  });
}

async function checkVersions(agents: readonly PinnedAgent[], home: string, log: ProgressLog): Promise<void> {
  for (const agent of agents) {
    const binary = join(agentsBinDir(), agent.binary);
    const result = await execa(binary, ["--version"], {
      reject: false,
      all: true,
      timeout: 60_000,
      env: { PATH: process.env.PATH ?? "", HOME: home, DISABLE_AUTOUPDATER: "1", NO_COLOR: "1" },
      extendEnv: false,
    });
    if (result.failed || !(result.all ?? "").includes(agent.versionText)) {
      throw new AgentSetupError(
        `${binary} --version did not print ${agent.versionText} (exit ${result.exitCode}): ${(result.all ?? "").slice(0, 500)}`,
      );
    }
    log(`${agent.binary}: ${agent.versionText}`);
  }
}

function seconds(started: number): string {
  return `${((Date.now() - started) / 1000).toFixed(1)} s`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  setupAgents().catch((error: unknown) => {
    console.error(`[setup-agents] ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
