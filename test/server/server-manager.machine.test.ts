/**
 * The server-manager statechart with its actors replaced (`machine.provide`): every transition of
 * start, reuse, reconfigure, crash, restart, failed starts and stop, for llama-server and Ollama,
 * without a real process.
 */

import { describe, expect, it } from "vitest";
import { createActor, fromCallback, fromPromise, waitFor } from "xstate";
import type { ServerProps } from "../../src/clients/llama-server/props.ts";
import { ContextDiscoveryError } from "../../src/core/errors.ts";
import { errorOfFailure, PortInUseError, type ServerExit } from "../../src/server/errors.ts";
import { type LaunchConfig, launchConfigSchema } from "../../src/server/launch-config.ts";
import {
  createServerManagerMachine,
  type ServerManagerEmitted,
  type ServerManagerInput,
  type ServerManagerSnapshot,
  serverStatusOf,
} from "../../src/server/server-manager.machine.ts";
import type {
  AwaitReadyInput,
  OllamaInput,
  PreparePortInput,
  ServerProcessCommand,
  ServerProcessEvent,
  ServerProcessInput,
} from "../../src/server/server-manager-actors.ts";

const PROPS: ServerProps = { nCtx: 2048, totalSlots: 1, modelPath: "model.gguf", buildInfo: "b1" };

interface FakeProcess {
  pid: number;
  args: string[];
  terminated: boolean;
  exit(exit?: Partial<ServerExit>): void;
}

type Readiness = "ready" | Error | "never";

/** A machine whose process, port check, readiness probe and Ollama calls are scripted. */
function harness(
  options: { backend?: "llamaserver" | "ollama"; port?: () => Promise<number>; readiness?: Readiness[] } = {},
) {
  const processes: FakeProcess[] = [];
  const readiness = [...(options.readiness ?? [])];
  const unloaded: (string | null)[] = [];
  const machine = createServerManagerMachine({ log: () => {} }).provide({
    actors: {
      serverProcess: fromCallback<ServerProcessCommand, ServerProcessInput, ServerProcessEvent>(
        ({ input, sendBack, receive }) => {
          const pid = 1000 + processes.length;
          const process: FakeProcess = {
            pid,
            args: input.args,
            terminated: false,
            exit: (exit = {}) =>
              sendBack({
                type: "server.exited",
                exit: { pid, exitCode: 0, signal: null, stderrTail: "", ...exit },
              }),
          };
          processes.push(process);
          sendBack({ type: "server.spawned", pid });
          receive(() => {
            process.terminated = true;
          });
        },
      ),
      preparePort: fromPromise<number, PreparePortInput>(options.port ?? (async () => 9000)),
      awaitReady: fromPromise<ServerProps, AwaitReadyInput>(async () => {
        const next = readiness.shift() ?? "ready";
        if (next === "never") return new Promise<ServerProps>(() => {});
        if (next instanceof Error) throw next;
        return PROPS;
      }),
      ollamaConnect: fromPromise<void, OllamaInput>(async () => {}),
      ollamaUnload: fromPromise<void, OllamaInput>(async ({ input }) => {
        unloaded.push(input.model);
      }),
    },
  });
  const input: ServerManagerInput = {
    backend: options.backend ?? "llamaserver",
    host: "127.0.0.1",
    port: null,
    binaryPath: "/bin/llama-server",
    ollamaUrl: "http://127.0.0.1:11434",
    startTimeoutMs: 1_000,
    stopTimeoutMs: 1_000,
  };
  const actor = createActor(machine, { input });
  const emitted: ServerManagerEmitted[] = [];
  for (const type of [
    "server.ready",
    "server.reused",
    "server.crashed",
    "server.stopped",
    "server.failed",
  ] as const) {
    actor.on(type, (event) => emitted.push(event));
  }
  actor.start();
  const settled = () =>
    waitFor(actor, (snapshot) => !snapshot.hasTag("starting") && !snapshot.hasTag("stopping"));
  return { actor, processes, emitted, unloaded, settled };
}

const config = (overrides: Partial<LaunchConfig> = {}) =>
  launchConfigSchema.parse({ ggufPath: "model.gguf", ctx: 2048, ...overrides });
const status = (snapshot: ServerManagerSnapshot) => serverStatusOf(snapshot);

describe("server-manager statechart", () => {
  it("starts: port, spawn, readiness, healthy with pid and props", async () => {
    const { actor, processes, emitted, settled } = harness();
    expect(status(actor.getSnapshot())).toBe("idle");
    actor.send({ type: "server.start", config: config() });
    const snapshot = await settled();
    expect(status(snapshot)).toBe("healthy");
    expect(snapshot.context).toMatchObject({ boundPort: 9000, pid: 1000, props: PROPS, launches: 1 });
    expect(processes[0]?.args).toEqual([
      "--model",
      "model.gguf",
      "--host",
      "127.0.0.1",
      "--port",
      "9000",
      "--jinja",
      "--ctx-size",
      "2048",
    ]);
    expect(emitted).toEqual([{ type: "server.ready", props: PROPS, pid: 1000, port: 9000 }]);
  });

  it("reuses the process for the same configuration and restarts it for another", async () => {
    const { actor, processes, emitted, settled } = harness();
    actor.send({ type: "server.start", config: config() });
    await settled();
    actor.send({ type: "server.start", config: config() });
    expect(status(actor.getSnapshot())).toBe("healthy");
    expect(emitted.at(-1)).toEqual({ type: "server.reused", pid: 1000 });
    expect(processes).toHaveLength(1);

    actor.send({ type: "server.start", config: config({ ctx: 4096 }) });
    expect(status(actor.getSnapshot())).toBe("stopping");
    expect(processes[0]?.terminated).toBe(true);
    processes[0]?.exit();
    const snapshot = await settled();
    expect(status(snapshot)).toBe("healthy");
    expect(processes).toHaveLength(2);
    expect(processes[1]?.args).toContain("4096");
    expect(snapshot.context).toMatchObject({ pid: 1001, launches: 2, config: { ctx: 4096 } });
  });

  it("reports an exit while healthy as a crash, and restarts on request", async () => {
    const { actor, processes, emitted, settled } = harness();
    actor.send({ type: "server.start", config: config() });
    await settled();
    const exit = { signal: "SIGKILL", exitCode: null, stderrTail: "listening" };
    processes[0]?.exit(exit);
    expect(status(actor.getSnapshot())).toBe("crashed");
    expect(actor.getSnapshot().context.exit).toEqual({ pid: 1000, ...exit });
    expect(emitted.at(-1)).toEqual({ type: "server.crashed", exit: { pid: 1000, ...exit } });

    actor.send({ type: "server.restart" });
    const snapshot = await settled();
    expect(status(snapshot)).toBe("healthy");
    expect(snapshot.context).toMatchObject({ pid: 1001, exit: null, failure: null, launches: 2 });
  });

  it("restarts a healthy server after its process exited", async () => {
    const { actor, processes, settled } = harness();
    actor.send({ type: "server.start", config: config() });
    await settled();
    actor.send({ type: "server.restart", config: config({ ctx: 1024 }) });
    expect(processes[0]?.terminated).toBe(true);
    expect(processes).toHaveLength(1);
    processes[0]?.exit();
    const snapshot = await settled();
    expect(status(snapshot)).toBe("healthy");
    expect(processes[1]?.args).toContain("1024");
  });

  it("turns an early exit that says the port is taken into a port_in_use failure", async () => {
    const { actor, processes, emitted } = harness({ readiness: ["never"] });
    actor.send({ type: "server.start", config: config() });
    await waitFor(actor, (snapshot) => snapshot.context.pid !== null);
    processes[0]?.exit({
      exitCode: 1,
      stderrTail: "E srv start: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 9000",
    });
    const snapshot = actor.getSnapshot();
    expect(status(snapshot)).toBe("failed");
    expect(snapshot.context.failure).toMatchObject({ kind: "port_in_use", port: 9000, exitCode: 1 });
    expect(errorOfFailure(snapshot.context.failure!)).toBeInstanceOf(PortInUseError);
    expect(emitted.at(-1)?.type).toBe("server.failed");
  });

  it("reports any other early exit with its code and output", async () => {
    const { actor, processes } = harness({ readiness: ["never"] });
    actor.send({ type: "server.start", config: config() });
    await waitFor(actor, (snapshot) => snapshot.context.pid !== null);
    processes[0]?.exit({ exitCode: 1, stderrTail: "failed to load model" });
    expect(actor.getSnapshot().context.failure).toMatchObject({
      kind: "exited_during_start",
      message:
        "llama-server exited with code 1 before it became healthy.\nLast output:\nfailed to load model",
    });
  });

  it("reports a binary that cannot be spawned", async () => {
    const { actor, processes } = harness({ readiness: ["never"] });
    actor.send({ type: "server.start", config: config() });
    await waitFor(actor, (snapshot) => snapshot.context.pid !== null);
    processes[0]?.exit({ exitCode: null, spawnError: "spawn /bin/llama-server ENOENT" });
    expect(actor.getSnapshot().context.failure).toMatchObject({
      kind: "spawn_failed",
      message: "llama-server could not be spawned: spawn /bin/llama-server ENOENT",
    });
  });

  it("stops the process before failing when /props is unusable", async () => {
    const { actor, processes, settled } = harness({
      readiness: [new ContextDiscoveryError("no n_ctx in /props")],
    });
    actor.send({ type: "server.start", config: config() });
    await waitFor(actor, (snapshot) => snapshot.hasTag("stopping"));
    expect(processes[0]?.terminated).toBe(true);
    processes[0]?.exit();
    const snapshot = await settled();
    expect(status(snapshot)).toBe("failed");
    expect(snapshot.context.failure).toEqual({ kind: "bad_props", message: "no n_ctx in /props" });
    expect(errorOfFailure(snapshot.context.failure!)).toBeInstanceOf(ContextDiscoveryError);
  });

  it("fails without spawning when the port check refuses", async () => {
    const { actor, processes, settled } = harness({
      port: async () => {
        throw new PortInUseError({
          kind: "port_in_use",
          port: 8080,
          message: "Port 8080 on 127.0.0.1 is already in use.",
        });
      },
    });
    actor.send({ type: "server.start", config: config() });
    const snapshot = await settled();
    expect(status(snapshot)).toBe("failed");
    expect(snapshot.context.failure).toEqual({
      kind: "port_in_use",
      port: 8080,
      message: "Port 8080 on 127.0.0.1 is already in use.",
    });
    expect(processes).toHaveLength(0);
  });

  it("stops: terminate, wait for the exit, then stopped; a stop during a restart wins", async () => {
    const { actor, processes, emitted, settled } = harness();
    actor.send({ type: "server.start", config: config() });
    await settled();
    actor.send({ type: "server.restart" });
    actor.send({ type: "server.stop" });
    processes[0]?.exit();
    const snapshot = await settled();
    expect(status(snapshot)).toBe("stopped");
    expect(snapshot.context.pid).toBeNull();
    expect(processes).toHaveLength(1);
    expect(emitted.at(-1)).toEqual({ type: "server.stopped" });
  });

  it("ignores a restart before anything was started", () => {
    const { actor } = harness();
    actor.send({ type: "server.stop" });
    actor.send({ type: "server.restart" });
    expect(status(actor.getSnapshot())).toBe("stopped");
    expect(actor.getSnapshot().context.launches).toBe(0);
  });

  it("attaches to Ollama without a process and unloads the model it connected on stop", async () => {
    const { actor, processes, unloaded, settled } = harness({ backend: "ollama" });
    actor.send({ type: "server.start", config: launchConfigSchema.parse({ model: "llama3.2" }) });
    expect(status(await settled())).toBe("healthy");
    actor.send({ type: "server.start", config: launchConfigSchema.parse({ model: "qwen3:8b" }) });
    expect(status(await settled())).toBe("healthy");
    actor.send({ type: "server.stop" });
    expect(status(await settled())).toBe("stopped");
    expect(unloaded).toEqual(["llama3.2", "qwen3:8b"]);
    expect(processes).toHaveLength(0);
  });
});
