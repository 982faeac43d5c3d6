/**
 * Supervision in the server-manager statechart with its actors replaced and a simulated clock:
 * a crash restarts after the backoff, a failed liveness probe kills (SIGKILL) and restarts, a
 * restart that fails is retried, the limit ends in `failed` with a gave-up message, and nothing is
 * restarted without a policy or after an explicit start that fails.
 */
import { describe, expect, it } from "vitest";
import { createActor, type EventObject, fromCallback, fromPromise, SimulatedClock } from "xstate";
import type { ServerProps } from "../../src/clients/llama-server/props.ts";
import type { ServerExit } from "../../src/server/errors.ts";
import { launchConfigSchema } from "../../src/server/launch-config.ts";
import {
  createServerManagerMachine,
  type ServerManagerEmitted,
  type ServerManagerSnapshot,
  serverStatusOf,
} from "../../src/server/server-manager.machine.ts";
import type {
  AwaitReadyInput,
  LivenessProbeEvent,
  LivenessProbeInput,
  PreparePortInput,
  ServerProcessCommand,
  ServerProcessEvent,
  ServerProcessInput,
} from "../../src/server/server-manager-actors.ts";
import { type SupervisionOptions, supervisionPolicySchema } from "../../src/server/supervision.ts";

const PROPS: ServerProps = { nCtx: 2048, totalSlots: 1, modelPath: "model.gguf", buildInfo: "b1" };

interface FakeProcess {
  pid: number;
  apiKey: string | null | undefined;
  commands: ServerProcessCommand["type"][];
  exit(exit?: Partial<ServerExit>): void;
}

function harness(supervision: SupervisionOptions | null, readiness: ("ready" | Error)[] = []) {
  const processes: FakeProcess[] = [];
  const probes: { input: LivenessProbeInput; report: (message: string) => void }[] = [];
  const readyInputs: AwaitReadyInput[] = [];
  const queue = [...readiness];
  const clock = new SimulatedClock();
  const machine = createServerManagerMachine({ log: () => {} }).provide({
    actors: {
      serverProcess: fromCallback<ServerProcessCommand, ServerProcessInput, ServerProcessEvent>(
        ({ input, sendBack, receive }) => {
          const pid = 1000 + processes.length;
          const process: FakeProcess = {
            pid,
            apiKey: input.apiKey,
            commands: [],
            exit: (exit = {}) =>
              sendBack({
                type: "server.exited",
                exit: { pid, exitCode: null, signal: "SIGKILL", stderrTail: "", ...exit },
              }),
          };
          processes.push(process);
          sendBack({ type: "server.spawned", pid });
          receive((command) => {
            process.commands.push(command.type);
          });
        },
      ),
      preparePort: fromPromise<number, PreparePortInput>(async () => 9000),
      awaitReady: fromPromise<ServerProps, AwaitReadyInput>(async ({ input }) => {
        readyInputs.push(input);
        const next = queue.shift() ?? "ready";
        if (next instanceof Error) throw next;
        return PROPS;
      }),
      livenessProbe: fromCallback<EventObject, LivenessProbeInput, LivenessProbeEvent>(
        ({ input, sendBack }) => {
          probes.push({ input, report: (message) => sendBack({ type: "server.unresponsive", message }) });
        },
      ),
    },
  });
  const actor = createActor(machine, {
    clock,
    input: {
      backend: "llamaserver",
      host: "127.0.0.1",
      port: null,
      binaryPath: "/bin/llama-server",
      ollamaUrl: "http://127.0.0.1:11434",
      startTimeoutMs: 1_000,
      stopTimeoutMs: 1_000,
      supervision: supervision === null ? null : supervisionPolicySchema.parse(supervision),
      apiKey: "secret",
    },
  });
  const emitted: ServerManagerEmitted[] = [];
  for (const type of ["server.crashed", "server.failed", "server.unhealthy", "server.restarting"] as const) {
    actor.on(type, (event) => emitted.push(event));
  }
  const statuses: string[] = [];
  actor.subscribe((snapshot) => {
    const status = serverStatusOf(snapshot);
    if (statuses.at(-1) !== status) statuses.push(status);
  });
  actor.start();
  return { actor, clock, processes, probes, readyInputs, emitted, statuses };
}

const config = launchConfigSchema.parse({ ggufPath: "model.gguf" });
/** Lets the fake promise actors settle. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));
const status = (snapshot: ServerManagerSnapshot) => serverStatusOf(snapshot);

describe("server-manager supervision", () => {
  it("restarts a crashed server after the backoff, with the same key, and counts it", async () => {
    const { actor, clock, processes, readyInputs, emitted } = harness({ backoffMs: 100 });
    actor.send({ type: "server.start", config });
    await settle();
    expect(status(actor.getSnapshot())).toBe("healthy");
    processes[0]!.exit();
    expect(status(actor.getSnapshot())).toBe("restarting");
    expect(emitted.map((event) => event.type)).toEqual(["server.crashed", "server.restarting"]);
    expect(emitted[1]).toEqual({ type: "server.restarting", attempt: 1, delayMs: 100 });
    clock.increment(99);
    expect(processes).toHaveLength(1);
    clock.increment(1);
    await settle();
    expect(processes).toHaveLength(2);
    expect(status(actor.getSnapshot())).toBe("healthy");
    expect(actor.getSnapshot().context).toMatchObject({ restarts: 1, pid: 1001 });
    expect(processes.map((process) => process.apiKey)).toEqual(["secret", "secret"]);
    expect(readyInputs.map((input) => input.apiKey)).toEqual(["secret", "secret"]);
  });

  it("kills an unresponsive server with SIGKILL, reports it unhealthy, and restarts it", async () => {
    const { actor, clock, processes, probes, emitted, statuses } = harness({ backoffMs: 50 });
    actor.send({ type: "server.start", config });
    await settle();
    expect(probes[0]?.input).toMatchObject({ baseUrl: "http://127.0.0.1:9000", apiKey: "secret" });
    probes[0]!.report("failed 3 liveness probes in a row");
    expect(status(actor.getSnapshot())).toBe("unhealthy");
    expect(processes[0]!.commands).toEqual(["process.kill"]);
    expect(emitted[0]).toEqual({
      type: "server.unhealthy",
      message: "failed 3 liveness probes in a row",
      pid: 1000,
    });
    processes[0]!.exit();
    clock.increment(50);
    await settle();
    expect(status(actor.getSnapshot())).toBe("healthy");
    expect(statuses).toEqual([
      "idle",
      "starting",
      "healthy",
      "unhealthy",
      "restarting",
      "starting",
      "healthy",
    ]);
    expect(probes).toHaveLength(2);
  });

  it("retries a restart that fails to become ready, then serves", async () => {
    const { actor, clock, processes } = harness({ backoffMs: 100 }, ["ready", new Error("no /health")]);
    actor.send({ type: "server.start", config });
    await settle();
    processes[0]!.exit();
    clock.increment(100);
    await settle();
    // The second process never became ready: it is stopped, and a third one is tried after 200 ms.
    expect(processes[1]!.commands).toEqual(["process.terminate"]);
    processes[1]!.exit({ signal: "SIGTERM" });
    expect(status(actor.getSnapshot())).toBe("restarting");
    clock.increment(200);
    await settle();
    expect(status(actor.getSnapshot())).toBe("healthy");
    expect(actor.getSnapshot().context).toMatchObject({ restarts: 2, pid: 1002 });
  });

  it("gives up after maxRestarts within the window: failed, with a message naming the limit and the cause", async () => {
    const { actor, clock, processes, emitted } = harness({ maxRestarts: 2, backoffMs: 10 });
    actor.send({ type: "server.start", config });
    await settle();
    for (const index of [0, 1]) {
      processes[index]!.exit();
      clock.increment(1_000);
      await settle();
      expect(status(actor.getSnapshot())).toBe("healthy");
    }
    processes[2]!.exit({ signal: null, exitCode: 134 });
    expect(status(actor.getSnapshot())).toBe("failed");
    const failed = emitted.at(-1);
    expect(failed?.type).toBe("server.failed");
    expect(failed?.type === "server.failed" && failed.failure).toMatchObject({
      kind: "gave_up",
      message: expect.stringMatching(
        /after 2 restart\(s\) within 600 s \(last: pid 1002 exited with code 134\)/,
      ),
    });
    clock.increment(60_000);
    expect(processes).toHaveLength(3);
  });

  it("without a policy a crash is only reported, and no probe runs", async () => {
    const { actor, clock, processes, probes } = harness(null);
    actor.send({ type: "server.start", config });
    await settle();
    expect(probes[0]?.input.policy).toBeNull();
    processes[0]!.exit();
    clock.increment(60_000);
    expect(status(actor.getSnapshot())).toBe("crashed");
    expect(processes).toHaveLength(1);
  });

  it("does not retry a first start that fails: start() reports it", async () => {
    const { actor, clock, processes } = harness({ backoffMs: 10 }, [new Error("no /health")]);
    actor.send({ type: "server.start", config });
    await settle();
    processes[0]!.exit({ signal: "SIGTERM" });
    clock.increment(60_000);
    expect(status(actor.getSnapshot())).toBe("failed");
    expect(processes).toHaveLength(1);
  });

  it("stops during the backoff without restarting", async () => {
    const { actor, clock, processes } = harness({ backoffMs: 100 });
    actor.send({ type: "server.start", config });
    await settle();
    processes[0]!.exit();
    actor.send({ type: "server.stop" });
    clock.increment(1_000);
    expect(status(actor.getSnapshot())).toBe("stopped");
    expect(processes).toHaveLength(1);
  });
});
