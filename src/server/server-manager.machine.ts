/**
 * The server manager's statechart: a llama-server process from port check to health to exit
 * (stop, crash, restart), or, for Ollama, a reachability check and a model unload. The context is
 * plain data (configuration, pid, `/props`, the last exit and failure); the process and the probes
 * are invoked actors, replaceable with `machine.provide({ actors })`.
 */
import { type ActorRefFrom, assign, emit, type SnapshotFrom, sendTo, setup } from "xstate";
import type { ServerProps } from "../clients/llama-server-props.ts";
import { failureOfEarlyExit, failureOfError, type ServerExit, type ServerFailure } from "./errors.ts";
import { buildLlamaServerArgs, type LaunchConfig, sameLaunchConfig } from "./launch-config.ts";
import {
  awaitReadyLogic,
  createServerProcessLogic,
  ollamaConnectLogic,
  ollamaUnloadLogic,
  preparePortLogic,
  type ServerProcessDeps,
} from "./server-manager-actors.ts";

/** The backends a server manager drives. */
export type ServerBackend = "llamaserver" | "ollama";

/** Fixed settings of one manager. */
export interface ServerManagerInput {
  backend: ServerBackend;
  host: string;
  /** The port asked for; `null` picks a free one. */
  port: number | null;
  /** The llama-server binary (unused for Ollama). */
  binaryPath: string | null;
  ollamaUrl: string;
  startTimeoutMs: number;
  stopTimeoutMs: number;
}

/** The machine's JSON context. */
export interface ServerManagerContext extends ServerManagerInput {
  config: LaunchConfig | null;
  /** The port of the current (or last) launch. */
  boundPort: number | null;
  pid: number | null;
  props: ServerProps | null;
  exit: ServerExit | null;
  failure: ServerFailure | null;
  /** The Ollama model that `stop` unloads (the one connected last). */
  loadedModel: string | null;
  /** Processes spawned so far (Ollama connections count too). */
  launches: number;
  /** What follows the exit the machine is waiting for in `stopping`. */
  afterExit: "stop" | "restart" | "fail";
}

/** Events the manager accepts (the `server.spawned` / `server.exited` ones come from its process). */
export type ServerManagerEvent =
  | { type: "server.start"; config: LaunchConfig }
  | { type: "server.stop" }
  | { type: "server.restart"; config?: LaunchConfig }
  | { type: "server.spawned"; pid: number }
  | { type: "server.exited"; exit: ServerExit };

/** Events the manager emits (`actor.on(type, listener)`). */
export type ServerManagerEmitted =
  | { type: "server.ready"; props: ServerProps | null; pid: number | null; port: number | null }
  | { type: "server.reused"; pid: number | null }
  | { type: "server.crashed"; exit: ServerExit }
  | { type: "server.stopped" }
  | { type: "server.failed"; failure: ServerFailure };

const LAUNCH = [
  { guard: "isOllama", target: "#serverManager.attached", actions: ["storeConfig", "clearOutcome"] },
  { target: "#serverManager.preparing", actions: ["storeConfig", "clearOutcome"] },
] as const;
const RELAUNCH = [
  { guard: "cannotRelaunch" },
  { guard: "isOllama", target: "#serverManager.attached", actions: ["storeConfig", "clearOutcome"] },
  { target: "#serverManager.preparing", actions: ["storeConfig", "clearOutcome"] },
] as const;

/**
 * Build the server-manager statechart. `deps` feeds the process actor's log lines.
 * @example
 * const actor = createActor(createServerManagerMachine({ log: console.info }), { input }).start();
 * actor.send({ type: "server.start", config: launchConfigSchema.parse({ ggufPath }) });
 * await waitFor(actor, (snapshot) => snapshot.hasTag("healthy"));
 */
export function createServerManagerMachine(deps: ServerProcessDeps) {
  return setup({
    types: {
      context: {} as ServerManagerContext,
      input: {} as ServerManagerInput,
      events: {} as ServerManagerEvent,
      emitted: {} as ServerManagerEmitted,
    },
    actors: {
      serverProcess: createServerProcessLogic(deps),
      preparePort: preparePortLogic,
      awaitReady: awaitReadyLogic,
      ollamaConnect: ollamaConnectLogic,
      ollamaUnload: ollamaUnloadLogic,
    },
    guards: {
      isOllama: ({ context }) => context.backend === "ollama",
      sameConfig: ({ context, event }) =>
        event.type === "server.start" &&
        context.config !== null &&
        sameLaunchConfig(context.config, event.config),
      cannotRelaunch: ({ context, event }) =>
        event.type === "server.restart" && event.config === undefined && context.config === null,
      restartAfterExit: ({ context }) => context.afterExit === "restart",
      failAfterExit: ({ context }) => context.afterExit === "fail",
    },
    actions: {
      storeConfig: assign({
        config: ({ context, event }) =>
          (event.type === "server.start" || event.type === "server.restart") && event.config
            ? event.config
            : context.config,
      }),
      clearOutcome: assign({ exit: null, failure: null, props: null, pid: null, afterExit: "stop" }),
      countLaunch: assign({ launches: ({ context }) => context.launches + 1 }),
      storePid: assign({ pid: ({ event }) => (event.type === "server.spawned" ? event.pid : null) }),
      storeExit: assign({ exit: ({ event }) => (event.type === "server.exited" ? event.exit : null) }),
      storeEarlyExit: assign({
        failure: ({ context, event }) =>
          event.type === "server.exited"
            ? failureOfEarlyExit(event.exit, context.host, context.boundPort ?? 0)
            : context.failure,
      }),
      markStop: assign({ afterExit: "stop" }),
      markRestart: assign({ afterExit: "restart" }),
      terminateProcess: sendTo("process", { type: "process.terminate" }),
      emitReady: emit(({ context }) => ({
        type: "server.ready" as const,
        props: context.props,
        pid: context.pid,
        port: context.boundPort,
      })),
      emitReused: emit(({ context }) => ({ type: "server.reused" as const, pid: context.pid })),
      emitCrashed: emit(({ event }) => ({
        type: "server.crashed" as const,
        exit: (event as Extract<ServerManagerEvent, { type: "server.exited" }>).exit,
      })),
      emitStopped: emit({ type: "server.stopped" as const }),
      emitFailed: emit(({ context }) => ({
        type: "server.failed" as const,
        failure: context.failure ?? { kind: "exited_during_start" as const, message: "unknown failure" },
      })),
    },
  }).createMachine({
    id: "serverManager",
    context: ({ input }) => ({
      ...input,
      config: null,
      boundPort: null,
      pid: null,
      props: null,
      exit: null,
      failure: null,
      loadedModel: null,
      launches: 0,
      afterExit: "stop",
    }),
    initial: "idle",
    states: {
      idle: {
        on: { "server.start": LAUNCH, "server.stop": { target: "stopped" } },
      },
      preparing: {
        tags: ["starting"],
        invoke: {
          src: "preparePort",
          input: ({ context }) => ({
            host: context.host,
            requested: context.port,
            previous: context.boundPort,
          }),
          onDone: { target: "running", actions: assign({ boundPort: ({ event }) => event.output }) },
          onError: {
            target: "failed",
            actions: assign({ failure: ({ event }) => failureOfError(event.error, "port_in_use") }),
          },
        },
        on: { "server.stop": { target: "stopped" } },
      },
      running: {
        entry: "countLaunch",
        invoke: {
          id: "process",
          src: "serverProcess",
          input: ({ context }) => ({
            binaryPath: context.binaryPath ?? "llama-server",
            args: buildLlamaServerArgs(context.config!, { host: context.host, port: context.boundPort! }),
            stopTimeoutMs: context.stopTimeoutMs,
          }),
        },
        on: { "server.spawned": { actions: "storePid" } },
        initial: "starting",
        states: {
          starting: {
            tags: ["starting"],
            invoke: {
              src: "awaitReady",
              input: ({ context }) => ({
                baseUrl: `http://${context.host}:${context.boundPort}`,
                timeoutMs: context.startTimeoutMs,
              }),
              onDone: {
                target: "healthy",
                actions: [assign({ props: ({ event }) => event.output }), "emitReady"],
              },
              onError: {
                target: "stopping",
                actions: assign({
                  failure: ({ event }) => failureOfError(event.error, "start_timeout"),
                  afterExit: "fail",
                }),
              },
            },
            on: {
              "server.exited": { target: "#serverManager.failed", actions: ["storeExit", "storeEarlyExit"] },
              "server.start": [
                { guard: "sameConfig" },
                { target: "stopping", actions: ["storeConfig", "markRestart"] },
              ],
              "server.restart": { target: "stopping", actions: ["storeConfig", "markRestart"] },
              "server.stop": { target: "stopping", actions: "markStop" },
            },
          },
          healthy: {
            tags: ["healthy"],
            on: {
              "server.exited": { target: "#serverManager.crashed", actions: ["storeExit", "emitCrashed"] },
              "server.start": [
                { guard: "sameConfig", actions: "emitReused" },
                { target: "stopping", actions: ["storeConfig", "markRestart"] },
              ],
              "server.restart": { target: "stopping", actions: ["storeConfig", "markRestart"] },
              "server.stop": { target: "stopping", actions: "markStop" },
            },
          },
          stopping: {
            tags: ["stopping"],
            entry: "terminateProcess",
            on: {
              "server.exited": [
                { guard: "restartAfterExit", target: "#serverManager.preparing", actions: "clearOutcome" },
                { guard: "failAfterExit", target: "#serverManager.failed", actions: "storeExit" },
                { target: "#serverManager.stopped", actions: "storeExit" },
              ],
              "server.stop": { actions: "markStop" },
            },
          },
        },
      },
      attached: {
        entry: "countLaunch",
        initial: "connecting",
        states: {
          connecting: {
            tags: ["starting"],
            invoke: {
              src: "ollamaConnect",
              input: ({ context }) => ({ baseUrl: context.ollamaUrl, model: context.config?.model ?? null }),
              onDone: {
                target: "ready",
                actions: [
                  assign({ loadedModel: ({ context }) => context.config?.model ?? null }),
                  "emitReady",
                ],
              },
              onError: {
                target: "#serverManager.failed",
                actions: assign({ failure: ({ event }) => failureOfError(event.error, "unreachable") }),
              },
            },
            on: { "server.stop": { target: "#serverManager.stopped" } },
          },
          ready: {
            tags: ["healthy"],
            on: {
              "server.start": [
                { guard: "sameConfig", actions: "emitReused" },
                { target: "unloading", actions: ["storeConfig", "markRestart"] },
              ],
              "server.restart": { target: "unloading", actions: ["storeConfig", "markRestart"] },
              "server.stop": { target: "unloading", actions: "markStop" },
            },
          },
          unloading: {
            tags: ["stopping"],
            invoke: {
              src: "ollamaUnload",
              input: ({ context }) => ({ baseUrl: context.ollamaUrl, model: context.loadedModel }),
              onDone: [
                { guard: "restartAfterExit", target: "connecting", actions: "clearOutcome" },
                { target: "#serverManager.stopped" },
              ],
              onError: {
                target: "#serverManager.stopped",
                actions: assign({ failure: ({ event }) => failureOfError(event.error, "unreachable") }),
              },
            },
          },
        },
      },
      crashed: {
        on: { "server.start": LAUNCH, "server.restart": RELAUNCH, "server.stop": { target: "stopped" } },
      },
      failed: {
        entry: "emitFailed",
        on: { "server.start": LAUNCH, "server.restart": RELAUNCH, "server.stop": { target: "stopped" } },
      },
      stopped: {
        entry: ["emitStopped", assign({ pid: null })],
        on: { "server.start": LAUNCH, "server.restart": RELAUNCH },
      },
    },
  });
}

/** The server-manager machine type. */
export type ServerManagerMachine = ReturnType<typeof createServerManagerMachine>;
/** A running server-manager actor. */
export type ServerManagerActor = ActorRefFrom<ServerManagerMachine>;
/** A server-manager actor's snapshot. */
export type ServerManagerSnapshot = SnapshotFrom<ServerManagerMachine>;

/** Lifecycle status, derived from a snapshot's state and tags. */
export type ServerStatus = "idle" | "starting" | "healthy" | "stopping" | "crashed" | "failed" | "stopped";

/** The status a snapshot stands for. */
export function serverStatusOf(snapshot: ServerManagerSnapshot): ServerStatus {
  if (snapshot.hasTag("starting")) return "starting";
  if (snapshot.hasTag("healthy")) return "healthy";
  if (snapshot.hasTag("stopping")) return "stopping";
  if (snapshot.matches("crashed")) return "crashed";
  if (snapshot.matches("failed")) return "failed";
  if (snapshot.matches("stopped")) return "stopped";
  return "idle";
}
