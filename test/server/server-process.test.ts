/**
 * The process actor on its own, with small real processes standing in for llama-server: SIGKILL
 * after the grace when SIGTERM is ignored, a binary that cannot be spawned, the output tail, and
 * cleanup when the actor is stopped.
 */
import { describe, expect, it } from "vitest";
import { createActor, createMachine, sendTo } from "xstate";
import { withParentDeathSignal } from "../../src/server/parent-death.ts";
import { createServerProcessLogic, type ServerProcessEvent } from "../../src/server/server-manager-actors.ts";
import { isAlive } from "./helpers/server-processes.ts";

/** Resolves once `condition` holds (polled: process output and exits are not actor snapshots). */
function until(condition: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = () => (condition() ? resolve() : setTimeout(check, 10));
    check();
  });
}

/** Runs the process actor under a tiny parent that records what it sends back. */
function runProcess(binaryPath: string, args: string[], stopTimeoutMs = 200) {
  const events: ServerProcessEvent[] = [];
  const logs: string[] = [];
  const lines: string[] = [];
  const logic = createServerProcessLogic({
    log: (line) => logs.push(line),
    onServerLine: (line) => lines.push(line),
  });
  const parent = createActor(
    createMachine({
      types: {} as { events: ServerProcessEvent | { type: "terminate" } },
      invoke: { id: "process", src: logic, input: { binaryPath, args, stopTimeoutMs } },
      on: {
        "server.spawned": { actions: ({ event }) => events.push(event) },
        "server.exited": { actions: ({ event }) => events.push(event) },
        terminate: { actions: sendTo("process", { type: "process.terminate" }) },
      },
    }),
  ).start();
  const exited = async () => {
    await until(() => events.some((event) => event.type === "server.exited"));
    return events.find((event) => event.type === "server.exited") as Extract<
      ServerProcessEvent,
      { type: "server.exited" }
    >;
  };
  const spawnedPid = async () => {
    await until(() => events.some((event) => event.type === "server.spawned"));
    const spawned = events.find((event) => event.type === "server.spawned");
    return spawned?.type === "server.spawned" ? spawned.pid : -1;
  };
  return { parent, events, logs, lines, exited, spawnedPid };
}

describe("server process actor", () => {
  it("sends SIGKILL when the process ignores SIGTERM for longer than the grace", async () => {
    const run = runProcess("/bin/sh", ["-c", "trap '' TERM; echo ready; exec sleep 30"]);
    const pid = await run.spawnedPid();
    await until(() => run.lines.includes("ready"));
    run.parent.send({ type: "terminate" });
    const { exit } = await run.exited();
    expect(exit).toMatchObject({ pid, signal: "SIGKILL", exitCode: null, stderrTail: "ready" });
    const spawned = withParentDeathSignal("/bin/sh", ["-c", "trap '' TERM; echo ready; exec sleep 30"]);
    expect(run.logs).toEqual([
      `spawning ${spawned.command} ${spawned.args.join(" ")}`,
      `stopping pid ${pid} with SIGTERM`,
      `pid ${pid} did not exit 200 ms after SIGTERM; sending SIGKILL`,
    ]);
    run.parent.stop();
  });

  it("reports a binary that cannot be spawned as an exit with spawnError", async () => {
    const run = runProcess("/nonexistent/llama-server", ["--port", "1"]);
    const { exit } = await run.exited();
    expect(exit).toMatchObject({ pid: null, exitCode: null, signal: null });
    expect(exit.spawnError).toMatch(/ENOENT/);
    run.parent.stop();
  });

  it("keeps the last lines of stdout and stderr and reports the exit code", async () => {
    const script = "for i in $(seq 1 60); do echo line $i; done; echo oops >&2; exit 3";
    const run = runProcess("/bin/sh", ["-c", script]);
    const { exit } = await run.exited();
    expect(exit.exitCode).toBe(3);
    const tail = exit.stderrTail.split("\n");
    expect(tail).toHaveLength(40);
    expect(tail.at(-1)).toBe("oops");
    expect(tail[0]).toBe("line 22");
    expect(run.lines).toHaveLength(61);
    run.parent.stop();
  });

  it("terminates the process when the actor is stopped", async () => {
    const run = runProcess("/bin/sh", ["-c", "exec sleep 30"]);
    const pid = await run.spawnedPid();
    expect(isAlive(pid)).toBe(true);
    run.parent.stop();
    await until(() => !isAlive(pid));
    expect(isAlive(pid)).toBe(false);
  });
});
