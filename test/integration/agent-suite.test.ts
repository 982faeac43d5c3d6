/**
 * The agent task suite end to end, at CI size: one task (`create-file`), one agent (pi, the
 * smallest prompt), the real Qwen2.5-Coder 0.5B on a real llama-server, through `forge launch`
 * with the default guardrails, written by `runAgentSuite` as it is for `npm run bench:agents`.
 * Whether a 0.5B model on a shared CPU finishes the task is not reliable, so the test asserts the
 * mechanics: the row was written and read back, the grader ran on the repository the agent left,
 * the agent's request reached the model server through the proxy, the access log was counted
 * (every answered turn, all 200, when the agent exited on its own), and the run ended by itself
 * or at its cap, never hanging the suite.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RequestCounter, startRequestCounter } from "../../eval/agents/request-counter.ts";
import { agentRowSchema, runAgentSuite } from "../../eval/agents/run.ts";
import { selectTasks } from "../../eval/agents/tasks.ts";
import { readJsonl } from "../../eval/batch/jsonl.ts";
import { modelPath, QWEN_05B } from "../../scripts/setup-model.ts";
import { startTestLlamaServer, type TestLlamaServer } from "../helpers/llama-server-process.ts";

/** The run's cap: pi's first prompt is ~1.4k tokens, seconds on an idle CI core, minutes on a busy one. */
const CAP_MS = 300_000;

let server: TestLlamaServer | undefined;
let counter: RequestCounter | undefined;
const scratch = mkdtempSync(join(tmpdir(), "forge-agent-suite-"));

beforeAll(async () => {
  server = await startTestLlamaServer({
    modelPath: modelPath(QWEN_05B),
    ctx: 16_384,
    extraFlags: ["-n", "512"],
    // Loading takes seconds on an idle machine, minutes on a loaded shared one.
    startTimeoutMs: 240_000,
  });
  counter = await startRequestCounter(server.baseUrl);
}, 300_000);

afterAll(async () => {
  await counter?.close();
  await server?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe("agent task suite (pi, Qwen2.5-Coder 0.5B, through forge launch)", () => {
  it(
    "runs create-file end to end: grades the repository and writes the row",
    async () => {
      if (!counter) throw new Error("no request counter");
      const out = join(scratch, "rows.jsonl");
      const written = await runAgentSuite({
        tasks: selectTasks(["create-file"]),
        agents: ["pi"],
        arms: ["proxy"],
        model: "qwen2.5-coder-0.5b",
        counter,
        capMs: CAP_MS,
        out,
        resume: false,
      });
      expect(existsSync(out)).toBe(true);
      const { rows, problems } = readJsonl(out, agentRowSchema);
      expect(problems).toEqual([]);
      expect(rows).toEqual(written);
      expect(rows).toHaveLength(1);
      const row = rows[0];
      if (!row) throw new Error("no row");
      const report = JSON.stringify(row, null, 2);
      expect(row).toMatchObject({
        key: "qwen2.5-coder-0.5b|pi|proxy|create-file",
        agent: "pi",
        arm: "proxy",
      });
      // The grader ran: its line is one of create-file's verdicts, and agrees with `passed`.
      expect(row.detail, report).toMatch(
        /^(hello\.txt holds the line|hello\.txt does not exist|hello\.txt holds ".*")$/,
      );
      expect(row.passed, report).toBe(row.detail === "hello.txt holds the line");
      // The run ended on its own or at the cap, within the cap and a margin for clean-up.
      expect(["exit", "timeout"], report).toContain(row.exitReason);
      expect(row.wallMs, report).toBeLessThan(CAP_MS + 30_000);
      // The agent's first request went through the proxy to the model server. On a loaded machine
      // its answer may not come within the cap; when the agent ended on its own, the proxy logged
      // each answered turn (all 200), and each reached the model server.
      expect(row.backendCalls, report).toBeGreaterThanOrEqual(1);
      if (row.exitReason === "exit") {
        expect(row.turns, report).toBeGreaterThanOrEqual(1);
        expect(row.backendCalls, report).toBeGreaterThanOrEqual(row.turns);
        expect(row.proxyErrors, report).toBe(0);
      }
      console.info(
        `[agent-suite] pi proxy create-file: ${row.passed ? "passed" : "failed"} (${row.detail}), ${row.exitReason}, ${row.turns} turns, ${(row.wallMs / 1000).toFixed(0)} s`,
      );
    },
    CAP_MS + 120_000,
  );
});
