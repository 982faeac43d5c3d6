/**
 * The real coding agents, at the versions `scripts/setup-agents.ts` pins (installed into
 * `.cache/agents` by the test set-up), driven non-interactively through `forge launch <agent>`
 * against a deterministic backend: each must run the shell command the backend's first answer
 * gives it through its own shell tool and send the output back, because only a tool result
 * holding that output gets the final answer, whose nonce the agent must print. Each agent speaks
 * its own wire to the proxy (Claude Code Anthropic Messages, Codex Responses, opencode, Qwen
 * Code and pi chat completions, all streamed), in a temporary HOME and working folder, with telemetry
 * and update checks off (the recipes' variables); a run past its time has its process group killed.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { agentsBinDir } from "../../scripts/setup-agents.ts";
import {
  type BackendRequest,
  type ScriptedBackend,
  startScriptedBackend,
} from "../proxy/helpers/scripted-backend.ts";
import { createNonceTask, decideNonceReply, type NonceTask, nonceStep } from "./helpers/nonce-backend.ts";

const FORGE = fileURLToPath(new URL("../../scripts/forge.ts", import.meta.url));
/** tsx's loader by absolute URL: forge runs in the agent's working folder, where `tsx` would not resolve. */
const TSX = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;

/** How long one agent may take before its process group is killed. */
const RUN_TIMEOUT_MS = 120_000;

/** One agent: how it is driven non-interactively and what it should send. */
interface AgentCase {
  agent: "claude" | "codex" | "opencode" | "qwen" | "pi";
  /** Its own shell tool, which the backend calls. */
  shellTool: string;
  /** The proxy route its wire API uses. */
  route: string;
  /** The agent's arguments after `--`: non-interactive, tool calls approved. */
  args(task: NonceTask): string[];
  /** What else its requests must show, as the backend received them. */
  checkRequests?(requests: readonly BackendRequest[], report: string): void;
}

/** The roles of a backend request's messages. */
const rolesOf = (request: BackendRequest) =>
  ((request.body.messages ?? []) as { role?: string }[]).map((message) => message.role);

const CASES: AgentCase[] = [
  {
    agent: "claude",
    shellTool: "Bash",
    route: "/v1/messages",
    // `--dangerously-skip-permissions` is refused as root; allowing Bash is enough here.
    args: (task) => ["-p", task.prompt, "--allowedTools", "Bash", "--output-format", "text"],
    // Claude Code 2.1.197 sends a mid-conversation `role: "system"` message (its agent list); the
    // proxy keeps it in its place, after the first user turn.
    checkRequests: (requests, report) => {
      const midSystem = requests.some((request) => {
        const roles = rolesOf(request);
        const firstUser = roles.indexOf("user");
        return firstUser >= 0 && roles.indexOf("system", firstUser) > firstUser;
      });
      expect(midSystem, report).toBe(true);
    },
  },
  {
    agent: "codex",
    shellTool: "exec_command",
    route: "/v1/responses",
    args: (task) => [
      "exec",
      "--dangerously-bypass-approvals-and-sandbox",
      "--skip-git-repo-check",
      task.prompt,
    ],
  },
  {
    agent: "opencode",
    shellTool: "bash",
    route: "/v1/chat/completions",
    args: (task) => ["run", task.prompt],
  },
  {
    agent: "qwen",
    shellTool: "run_shell_command",
    route: "/v1/chat/completions",
    args: (task) => ["-p", task.prompt, "--yolo"],
  },
  {
    agent: "pi",
    shellTool: "bash",
    route: "/v1/chat/completions",
    // pi asks no approval for its tools; `-p` prints the answer and exits.
    args: (task) => ["-p", task.prompt],
  },
];

interface Run {
  child: ChildProcess;
  stdout: string;
  stderr: string;
}

const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * `forge launch <agent> --backend-url <backend> --log-file <log> -- <args>` from the sources, in
 * `workDir` with a fresh HOME and a minimal environment (no credentials of the machine's), its own
 * process group, killed whole after {@link RUN_TIMEOUT_MS}. Resolves with its exit code (null when
 * killed) and output.
 */
async function launchAgent(
  agent: string,
  backendUrl: string,
  args: string[],
  folders: { workDir: string; home: string; logFile: string },
): Promise<{ exitCode: number | null; stdout: string; stderr: string; timedOut: boolean }> {
  const { home } = folders;
  const runtimeDir = join(home, "run");
  mkdirSync(runtimeDir, { mode: 0o700 });
  const env: NodeJS.ProcessEnv = {
    PATH: `${agentsBinDir()}:${process.env.PATH ?? ""}`,
    HOME: home,
    USER: process.env.USER ?? "forge",
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_DATA_HOME: join(home, ".local", "share"),
    XDG_STATE_HOME: join(home, ".local", "state"),
    XDG_CACHE_HOME: join(home, ".cache"),
    XDG_RUNTIME_DIR: runtimeDir,
    LANG: "C.UTF-8",
    TERM: "dumb",
    NO_COLOR: "1",
  };
  const child = spawn(
    process.execPath,
    [
      "--import",
      TSX,
      FORGE,
      "launch",
      agent,
      "--backend-url",
      `${backendUrl}/v1`,
      "--log-file",
      folders.logFile,
      "--",
      ...args,
    ],
    { cwd: folders.workDir, env, stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  const run: Run = { child, stdout: "", stderr: "" };
  child.stdout?.on("data", (chunk) => {
    run.stdout += String(chunk);
  });
  child.stderr?.on("data", (chunk) => {
    run.stderr += String(chunk);
  });
  const killGroup = () => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  };
  cleanups.push(killGroup);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup();
  }, RUN_TIMEOUT_MS);
  const exitCode = await new Promise<number | null>((resolve) =>
    child.once("close", (code) => resolve(code)),
  );
  clearTimeout(timer);
  // The agent's own children (a shell it left running) go with the group.
  killGroup();
  return { exitCode, stdout: run.stdout, stderr: run.stderr, timedOut };
}

/** What the backend answered each request, for the failure message. */
function describeRequests(requests: readonly BackendRequest[], task: NonceTask, shellTool: string): string {
  return requests
    .filter((request) => request.path === "/v1/chat/completions")
    .map((request, index) => {
      const decision = decideNonceReply(request.body, task, shellTool);
      const tools = (Array.isArray(request.body.tools) ? request.body.tools : []) as {
        function?: { name?: string };
      }[];
      const names = tools.map((tool) => tool.function?.name).join(",");
      return `#${index + 1} stream=${String(request.body.stream)} tools=[${names}] → ${decision.kind === "text" ? decision.why : `call ${decision.name}`}`;
    })
    .join("\n");
}

describe("coding agents through forge launch (real binaries, scripted backend)", () => {
  for (const testCase of CASES) {
    it(`${testCase.agent}: runs the backend's ${testCase.shellTool} call and answers with its result`, async () => {
      const task = createNonceTask();
      const backend: ScriptedBackend = await startScriptedBackend([], {
        fallback: nonceStep(task, testCase.shellTool),
        // The agents' system prompts and tool lists are long: a context that needs no compaction.
        contextLength: 262_144,
      });
      cleanups.push(() => backend.close());
      const scratch = mkdtempSync(join(tmpdir(), `forge-agent-${testCase.agent}-`));
      cleanups.push(() => rmSync(scratch, { recursive: true, force: true }));
      const workDir = join(scratch, "work");
      const home = join(scratch, "home");
      mkdirSync(workDir);
      mkdirSync(home);
      const logFile = join(scratch, "proxy.log");

      const started = Date.now();
      const result = await launchAgent(testCase.agent, backend.url, testCase.args(task), {
        workDir,
        home,
        logFile,
      });
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      const proxyLog = existsSync(logFile) ? readFileSync(logFile, "utf8") : "(no proxy log)";
      const report = [
        `${testCase.agent} exit=${result.exitCode} timedOut=${result.timedOut} in ${seconds} s`,
        `--- backend requests\n${describeRequests(backend.requests, task, testCase.shellTool)}`,
        `--- proxy log\n${proxyLog.slice(-4000)}`,
        `--- stdout\n${result.stdout.slice(-3000)}`,
        `--- stderr\n${result.stderr.slice(-3000)}`,
      ].join("\n");
      console.info(`[coding-agents] ${testCase.agent}: exit ${result.exitCode} in ${seconds} s`);

      expect(result.timedOut, report).toBe(false);
      // The agent ran the command: the file it wrote holds the nonce, and its output went back.
      expect(existsSync(join(workDir, task.file)), report).toBe(true);
      expect(readFileSync(join(workDir, task.file), "utf8")).toBe(`${task.nonce}\n`);
      const proofRequest = backend.chatRequests.find((request) =>
        ((request.body.messages ?? []) as { role?: string; content?: unknown }[]).some(
          (message) => message.role === "tool" && JSON.stringify(message.content).includes(task.proof),
        ),
      );
      expect(proofRequest, report).toBeDefined();
      // It printed the final answer, which the backend gives only after the proof came back.
      expect(result.stdout, report).toContain(task.finalNonce);
      expect(result.exitCode, report).toBe(0);
      // Over its own wire API, every request of that route answered 200.
      const routeLines = proxyLog.split("\n").filter((line) => line.includes(`path=${testCase.route} `));
      expect(routeLines.length, report).toBeGreaterThanOrEqual(2);
      expect(
        routeLines.filter((line) => !line.includes("status=200")),
        report,
      ).toEqual([]);
      testCase.checkRequests?.(backend.chatRequests, report);
    }, 180_000);
  }
});
