/**
 * A run's scratch space: a fresh git repository holding a task's files (one commit), a fresh HOME
 * with its XDG folders, and a folder for the agent's config and the proxy's log; removed after the
 * run. `changesOf` is what the agent changed, from `git status`.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** The folders of one run. */
export interface Workspace {
  root: string;
  /** The task's git repository, the agent's working folder. */
  repo: string;
  home: string;
  /** `$XDG_RUNTIME_DIR` (0700), where `forge launch` writes the agent's config. */
  runtime: string;
  /** Config files of the direct arm and the proxy's log. */
  scratch: string;
  remove(): void;
}

const GIT_IDENTITY = ["-c", "user.name=forge-bench", "-c", "user.email=bench@forge.invalid"];

/** Make the folders and commit `files` to a fresh repository. */
export async function createWorkspace(files: Record<string, string>): Promise<Workspace> {
  const root = mkdtempSync(join(tmpdir(), "forge-agent-task-"));
  const repo = join(root, "repo");
  const home = join(root, "home");
  const runtime = join(home, "run");
  const scratch = join(root, "scratch");
  for (const dir of [repo, home, scratch]) mkdirSync(dir);
  mkdirSync(runtime, { mode: 0o700 });
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(repo, path)), { recursive: true });
    writeFileSync(join(repo, path), content);
  }
  await run("git", ["init", "-q", "-b", "main"], { cwd: repo });
  await run("git", ["add", "-A"], { cwd: repo });
  await run("git", [...GIT_IDENTITY, "commit", "-q", "-m", "task"], { cwd: repo });
  return { root, repo, home, runtime, scratch, remove: () => rmSync(root, { recursive: true, force: true }) };
}

/** The paths `git status --porcelain` reports in `repo` (changed, deleted and untracked). */
export async function changesOf(repo: string): Promise<string[]> {
  const { stdout } = await run("git", ["status", "--porcelain", "--untracked-files=all"], { cwd: repo });
  return stdout
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => line.slice(3));
}

/**
 * The agent's environment: no credentials or settings of this machine's, a fresh HOME and XDG
 * folders, the agents' bin folder first on PATH.
 */
export function agentBaseEnv(workspace: Workspace, binDir: string): NodeJS.ProcessEnv {
  const { home } = workspace;
  return {
    PATH: `${binDir}:${process.env.PATH ?? ""}`,
    HOME: home,
    USER: process.env.USER ?? "forge",
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_DATA_HOME: join(home, ".local", "share"),
    XDG_STATE_HOME: join(home, ".local", "state"),
    XDG_CACHE_HOME: join(home, ".cache"),
    XDG_RUNTIME_DIR: workspace.runtime,
    LANG: "C.UTF-8",
    TERM: "dumb",
    NO_COLOR: "1",
  };
}
