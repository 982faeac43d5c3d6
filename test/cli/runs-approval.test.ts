/**
 * `forge runs approve|deny` as real processes, with a `forge worker` process, on a queue
 * directory, a real redis-server and a real PostgreSQL: the parked run is listed with its pending
 * calls, one call is approved by id, the rest denied with a reason the model reads, the run
 * completes on the worker with the approved call run once, and a decision on the finished run
 * fails with the typed error's message.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { effectCounts } from "../fixtures/approval/payments.ts";
import { exitOf, runForge, spawnForge, waitForOutput } from "../helpers/forge-cli.ts";
import { useQueueServers } from "../helpers/queue-servers.ts";

const REGISTRY = new URL("../fixtures/approval/registry.ts", import.meta.url).pathname;
const dirs: string[] = [];
const { redis, postgres } = useQueueServers();
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const forge = (args: string[]) => runForge(args);

const engines = [
  { name: "a queue directory", queue: (dir: string) => join(dir, "queue") },
  { name: "redis://", queue: () => redis().url },
  { name: "postgres://", queue: () => postgres().url },
];

describe.each(engines)("forge runs approve|deny on $name", (engine) => {
  it("lists the pending calls, approves one call by id, denies the other with a reason, and refuses a finished run", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-cli-approval-"));
    dirs.push(dir);
    const queue = engine.queue(dir);
    const runId = `p-${Math.random().toString(36).slice(2, 10)}`;
    const env = { ...process.env, FORGE_TEST_DIR: dir };
    const worker = spawnForge(["worker", "--registry", REGISTRY, "--queue", queue], env);
    try {
      await waitForOutput(worker.output, /forge worker on .*: payments/, 30_000);
      expect(
        await forge(["enqueue", "payments", "Pay B2 250", "--queue", queue, "--run-id", runId]),
      ).toMatchObject({ code: 0 });
      await waitForOutput(worker.output, new RegExp(`${runId} awaiting_approval`), 30_000);
      const listed = await forge(["runs", "ls", "--status", "awaiting_approval", "--queue", queue]);
      const lines = listed.stdout.split("\n").filter((line) => line.includes(runId) || line.startsWith("  "));
      expect(lines[0]).toMatch(new RegExp(`^${runId}\\tawaiting_approval\\tpayments\\t`));
      const pending = lines.slice(1).map((line) => line.trim().split("\t"));
      expect(pending.map(([, state, tool, args]) => [state, tool, args])).toEqual([
        ["pending", "transfer", '{"to":"B2","amount":250}'],
        ["pending", "notify", '{"text":"paid"}'],
      ]);
      const transfer = pending[0]?.[0] as string;

      const approved = await forge(["runs", "approve", runId, "--call", transfer, "--queue", queue]);
      expect(approved.code).toBe(0);
      expect(approved.stdout).toMatch(new RegExp(`approve(d| requested): call ${transfer} of ${runId}`));
      // An embedded client checks against the run's file, which its worker updates at its next take.
      if (engine.name !== "a queue directory") {
        const again = await forge(["runs", "approve", runId, "--call", transfer, "--queue", queue]);
        expect(again.code).toBe(1);
        expect(again.stderr).toContain(`Call ${transfer} was already approved`);
      }
      const notify = pending[1]?.[0] as string;
      const denied = await forge([
        "runs",
        "deny",
        runId,
        "--call",
        notify,
        "--reason",
        "no mail today",
        "--queue",
        queue,
      ]);
      expect(denied.code).toBe(0);
      await waitForOutput(worker.output, new RegExp(`${runId} completed`), 30_000);
      expect(Object.values(effectCounts(dir, "transfer"))).toEqual([1]);
      expect(effectCounts(dir, "notify")).toEqual({});
      const shown = JSON.parse((await forge(["runs", "show", runId, "--queue", queue])).stdout);
      expect(shown).toMatchObject({ status: "completed", result: "paid" });
      expect(shown.approval.decisions).toEqual([
        { callId: transfer, approved: true },
        { callId: notify, approved: false, reason: "no mail today" },
      ]);
      const late = await forge(["runs", "deny", runId, "--queue", queue]);
      expect(late.code).toBe(1);
      expect(late.stderr).toContain(`Run ${runId} is completed: it no longer waits for approval`);
    } finally {
      worker.child.kill("SIGINT");
    }
    expect(await exitOf(worker.child)).toBe(0);
  }, 120_000);
});
