/**
 * A real coding agent calling a forge workflow served over MCP: Claude Code (the version
 * `scripts/setup-agents.ts` pins, in `.cache/agents`) launched through `forge launch claude` in
 * front of the scripted backend, with `--mcp-config` naming `forge mcp serve` on the fixture
 * registry. The backend's first answer calls the `reverse` workflow's tool with a random nonce;
 * only a tool result holding the nonce reversed (which only the workflow run yields) gets the final
 * answer, whose second nonce the agent must print.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { agentsBinDir } from "../../scripts/setup-agents.ts";
import { type BackendRequest, startScriptedBackend } from "../proxy/helpers/scripted-backend.ts";
import { createNonceTask, type NonceDecision, type NonceTask, replyWith } from "./helpers/nonce-backend.ts";

const FORGE = fileURLToPath(new URL("../../scripts/forge.ts", import.meta.url));
const REGISTRY = fileURLToPath(new URL("../fixtures/mcp-serve/registry.ts", import.meta.url));
const TSX = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
const TOOL = "mcp__forge__reverse";
const WAIT_TOOL = "WaitForMcpServers";
const RUN_TIMEOUT_MS = 150_000;

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

/** The text of a message's content (a string, or its parts). */
function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  return Array.isArray(content)
    ? content.map((part) => (typeof part?.text === "string" ? part.text : JSON.stringify(part))).join("")
    : JSON.stringify(content ?? "");
}

/** The task's answers: call the workflow's tool with the nonce, then the final answer once the proof came back. */
function decide(request: BackendRequest, task: NonceTask): NonceDecision {
  const messages = (request.body.messages ?? []) as { role?: string; content?: unknown }[];
  const tools = ((request.body.tools ?? []) as { function?: { name?: string } }[]).map(
    (tool) => tool.function?.name,
  );
  const isTask = messages.some(
    (message) => message.role === "user" && textOf(message.content).includes(task.taskId),
  );
  if (!isTask || tools.length === 0) return { kind: "text", text: "Forge agent test", why: "side-request" };
  const results = messages
    .filter((message) => message.role === "tool")
    .map((message) => textOf(message.content));
  if (results.some((result) => result.includes(task.proof))) {
    return { kind: "text", text: `The workflow ran. Final code: ${task.finalNonce}`, why: "final" };
  }
  const called = messages.some((message) =>
    ((message as { tool_calls?: { function?: { name?: string } }[] }).tool_calls ?? []).some(
      (call) => call.function?.name === TOOL,
    ),
  );
  if (called) return { kind: "text", text: `ERROR: no proof in ${results.join(" | ")}`, why: "no-proof" };
  // Claude Code connects MCP servers in the background: its first requests may lack their tools,
  // and offer one that waits for them.
  if (!tools.includes(TOOL) && tools.includes(WAIT_TOOL))
    return { kind: "tool_call", name: WAIT_TOOL, args: {} };
  if (!tools.includes(TOOL)) {
    return { kind: "text", text: `ERROR: no ${TOOL} among ${tools.join(", ")}`, why: "no-shell-tool" };
  }
  return {
    kind: "tool_call",
    name: TOOL,
    args: { message: task.nonce, promptVars: { audience: "an agent" } },
  };
}

describe("a real agent calling a forge workflow over MCP", () => {
  it("Claude Code (--mcp-config) runs the reverse workflow through forge mcp serve and answers with its result", async () => {
    const task = createNonceTask();
    const backend = await startScriptedBackend([], {
      fallback: (request) => replyWith(request, decide(request, task)),
      contextLength: 262_144,
    });
    const scratch = mkdtempSync(join(tmpdir(), "forge-mcp-agent-"));
    cleanups.push(() => rmSync(scratch, { recursive: true, force: true }));
    cleanups.push(() => void backend.close());
    const [workDir, home] = [join(scratch, "work"), join(scratch, "home")];
    mkdirSync(workDir);
    mkdirSync(join(home, "run"), { recursive: true, mode: 0o700 });
    const mcpConfig = join(scratch, "mcp.json");
    writeFileSync(
      mcpConfig,
      JSON.stringify({
        mcpServers: {
          forge: {
            command: process.execPath,
            args: ["--import", TSX, FORGE, "mcp", "serve", REGISTRY],
            env: { FORGE_TEST_DIR: scratch },
          },
        },
      }),
    );
    const env: NodeJS.ProcessEnv = {
      PATH: `${agentsBinDir()}:${process.env.PATH ?? ""}`,
      HOME: home,
      USER: process.env.USER ?? "forge",
      XDG_CONFIG_HOME: join(home, ".config"),
      XDG_DATA_HOME: join(home, ".local", "share"),
      XDG_STATE_HOME: join(home, ".local", "state"),
      XDG_CACHE_HOME: join(home, ".cache"),
      XDG_RUNTIME_DIR: join(home, "run"),
      LANG: "C.UTF-8",
      TERM: "dumb",
      NO_COLOR: "1",
      // `forge mcp serve` starts under tsx on a busy machine: give it longer than the default.
      MCP_TIMEOUT: "90000",
    };
    const logFile = join(scratch, "proxy.log");
    const prompt = `Call the reverse tool for ${task.taskId}, then report what it answered.`;
    const child = spawn(
      process.execPath,
      [
        "--import",
        TSX,
        FORGE,
        "launch",
        "claude",
        "--backend-url",
        `${backend.url}/v1`,
        "--log-file",
        logFile,
        "--",
        "-p",
        prompt,
        "--mcp-config",
        mcpConfig,
        "--strict-mcp-config",
        "--allowedTools",
        `${TOOL},${WAIT_TOOL}`,
        "--output-format",
        "text",
      ],
      { cwd: workDir, env, stdio: ["ignore", "pipe", "pipe"], detached: true },
    );
    const killGroup = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    };
    cleanups.push(killGroup);
    let [stdout, stderr] = ["", ""];
    child.stdout.on("data", (chunk) => {
      stdout += String(chunk);
    });
    child.stderr.on("data", (chunk) => {
      stderr += String(chunk);
    });
    const timer = setTimeout(killGroup, RUN_TIMEOUT_MS);
    const exitCode = await new Promise<number | null>((resolve) => child.once("close", resolve));
    clearTimeout(timer);
    killGroup();

    const toolNames = backend.chatRequests.map((request) =>
      ((request.body.tools ?? []) as { function?: { name?: string } }[])
        .map((tool) => tool.function?.name)
        .join(","),
    );
    const report = [
      `exit=${exitCode}`,
      `--- requests (tools)\n${toolNames.join("\n").slice(-3000)}`,
      `--- stdout\n${stdout.slice(-3000)}`,
      `--- stderr\n${stderr.slice(-3000)}`,
    ].join("\n");
    // The agent was offered the workflow's tool, called it, and got the workflow's result back.
    expect(
      toolNames.some((names) => names.split(",").includes(TOOL)),
      report,
    ).toBe(true);
    const proof = backend.chatRequests.some((request) =>
      ((request.body.messages ?? []) as { role?: string; content?: unknown }[]).some(
        (message) => message.role === "tool" && textOf(message.content).includes(task.proof),
      ),
    );
    expect(proof, report).toBe(true);
    expect(stdout, report).toContain(task.finalNonce);
    expect(exitCode, report).toBe(0);
  }, 200_000);
});
