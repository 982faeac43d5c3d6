/**
 * The server manager's statechart: a llama-server process from port check to health to exit
 * (stop, crash, restart), or, for Ollama, a reachability check and a model unload. Under a
 * supervision policy a crash, a failed restart or a hung server (the liveness probe) leads to a
 * restart after a backoff, until the policy's limit; then the manager gives up (`failed`). The
 * context is plain data (configuration, pid, `/props`, the last exit and failure, restart times);
 * the process and the probes are invoked actors, replaceable with `machine.provide({ actors })`.
 */
import { type ActorRefFrom, and, assign, emit, type SnapshotFrom, sendTo, setup } from "xstate";
import type { ServerProps } from "../clients/llama-server/props.ts";
import { failureOfEarlyExit, failureOfError, type ServerExit, type ServerFailure } from "./errors.ts";
import { buildLlamaServerArgs, type LaunchConfig, sameLaunchConfig } from "./launch-config.ts";
import {
  awaitReadyLogic,
  createServerProcessLogic,
  livenessProbeLogic,
  ollamaConnectLogic,
  ollamaUnloadLogic,
  preparePortLogic,
  type ServerProcessDeps,
} from "./server-manager-actors.ts";
import {
  describeExit,
  gaveUpMessage,
  nextRestart,
  restartsInWindow,
  type SupervisionPolicy,
} from "./supervision.ts";

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
  /** Restart after crashes and watch `/health` (absent or null: a crash is reported, nothing more). */
  supervision?: SupervisionPolicy | null;
  /** llama-server's API key (passed in its environment), sent by every probe. */
  apiKey?: string | null;
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
  /** Whether a crash now restarts the server (true once healthy under a supervision policy). */
  supervising: boolean;
  /** When the supervised restarts happened (epoch ms), for the policy's window. */
  restartTimes: number[];
  /** Supervised restarts since the last explicit start. */
  restarts: number;
  /** The backoff before the next supervised restart. */
  restartDelayMs: number;
}

/** Events the manager accepts (the `server.spawned` / `server.exited` ones come from its process). */
export type ServerManagerEvent =
  | { type: "server.start"; config: LaunchConfig }
  | { type: "server.stop" }
  | { type: "server.restart"; config?: LaunchConfig }
  | { type: "server.spawned"; pid: number }
  | { type: "server.exited"; exit: ServerExit }
  | { type: "server.unresponsive"; message: string };

/** Events the manager emits (`actor.on(type, listener)`). */
export type ServerManagerEmitted =
  | { type: "server.ready"; props: ServerProps | null; pid: number | null; port: number | null }
  | { type: "server.reused"; pid: number | null }
  | { type: "server.crashed"; exit: ServerExit }
  | { type: "server.stopped" }
  | { type: "server.failed"; failure: ServerFailure }
  | { type: "server.unhealthy"; message: string; pid: number | null }
  | { type: "server.restarting"; attempt: number; delayMs: number };

const FRESH = ["storeConfig", "clearOutcome", "resetSupervision"] as const;
const LAUNCH = [
  { guard: "isOllama", target: "#serverManager.attached", actions: FRESH },
  { target: "#serverManager.preparing", actions: FRESH },
] as const;
const RELAUNCH = [
  { guard: "cannotRelaunch" },
  { guard: "isOllama", target: "#serverManager.attached", actions: FRESH },
  { target: "#serverManager.preparing", actions: FRESH },
] as const;
const RECONFIGURE = ["storeConfig", "markRestart", "resetSupervision"] as const;
/** After an unexpected exit: restart after the backoff, or give up once the policy's limit is reached. */
const SUPERVISED_EXIT = [
  { guard: "mayRestart", target: "#serverManager.backoff", actions: ["storeExit", "scheduleRestart"] },
  { guard: "isSupervising", target: "#serverManager.failed", actions: ["storeExit", "storeGaveUp"] },
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
      livenessProbe: livenessProbeLogic,
    },
    delays: {
      restartBackoff: ({ context }) => context.restartDelayMs,
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
      isSupervising: ({ context }) => context.supervising,
      mayRestart: ({ context }) =>
        context.supervising &&
        context.supervision != null &&
        nextRestart(context.restartTimes, Date.now(), context.supervision) !== null,
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
      killProcess: sendTo("process", { type: "process.kill" }),
      startSupervising: assign({ supervising: ({ context }) => context.supervision != null }),
      resetSupervision: assign({ supervising: false, restartTimes: [], restarts: 0 }),
      scheduleRestart: assign(({ context }) => {
        const now = Date.now();
        const policy = context.supervision!;
        return {
          restartDelayMs: nextRestart(context.restartTimes, now, policy)?.delayMs ?? 0,
          restartTimes: [...restartsInWindow(context.restartTimes, now, policy), now],
          restarts: context.restarts + 1,
        };
      }),
      storeGaveUp: assign({
        failure: ({ context }) => ({
          kind: "gave_up" as const,
          message: gaveUpMessage(
            context.supervision!,
            context.failure?.message ?? (context.exit ? describeExit(context.exit) : "unknown"),
          ),
        }),
      }),
      storeUnresponsive: assign({
        failure: ({ event }) => ({
          kind: "unresponsive" as const,
          message: event.type === "server.unresponsive" ? event.message : "unresponsive",
        }),
      }),
      emitUnhealthy: emit(({ context, event }) => ({
        type: "server.unhealthy" as const,
        message: event.type === "server.unresponsive" ? event.message : "unresponsive",
        pid: context.pid,
      })),
      emitRestarting: emit(({ context }) => ({
        type: "server.restarting" as const,
        attempt: context.restarts,
        delayMs: context.restartDelayMs,
      })),
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
      supervising: false,
      restartTimes: [],
      restarts: 0,
      restartDelayMs: 0,
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
            apiKey: context.apiKey ?? null,
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
                apiKey: context.apiKey ?? null,
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
              "server.exited": [
                {
                  guard: "mayRestart",
                  target: "#serverManager.backoff",
                  actions: ["storeExit", "storeEarlyExit", "scheduleRestart"],
                },
                {
                  guard: "isSupervising",
                  target: "#serverManager.failed",
                  actions: ["storeExit", "storeEarlyExit", "storeGaveUp"],
                },
                { target: "#serverManager.failed", actions: ["storeExit", "storeEarlyExit"] },
              ],
              "server.start": [{ guard: "sameConfig" }, { target: "stopping", actions: RECONFIGURE }],
              "server.restart": { target: "stopping", actions: RECONFIGURE },
              "server.stop": { target: "stopping", actions: "markStop" },
            },
          },
          healthy: {
            description: "Serving; under supervision the liveness probe asks /health on a deadline.",
            tags: ["healthy"],
            entry: "startSupervising",
            invoke: {
              src: "livenessProbe",
              input: ({ context }) => ({
                baseUrl: `http://${context.host}:${context.boundPort}`,
                apiKey: context.apiKey ?? null,
                policy: context.supervision ?? null,
              }),
            },
            on: {
              "server.exited": [
                {
                  guard: "mayRestart",
                  target: "#serverManager.backoff",
                  actions: ["storeExit", "emitCrashed", "scheduleRestart"],
                },
                {
                  guard: "isSupervising",
                  target: "#serverManager.failed",
                  actions: ["storeExit", "emitCrashed", "storeGaveUp"],
                },
                { target: "#serverManager.crashed", actions: ["storeExit", "emitCrashed"] },
              ],
              "server.unresponsive": { target: "unhealthy", actions: ["storeUnresponsive", "emitUnhealthy"] },
              "server.start": [
                { guard: "sameConfig", actions: "emitReused" },
                { target: "stopping", actions: RECONFIGURE },
              ],
              "server.restart": { target: "stopping", actions: RECONFIGURE },
              "server.stop": { target: "stopping", actions: "markStop" },
            },
          },
          unhealthy: {
            description:
              "The liveness probe failed too often: the process is killed (SIGKILL), then restarted.",
            tags: ["unhealthy"],
            entry: "killProcess",
            on: {
              "server.exited": SUPERVISED_EXIT,
              "server.restart": { target: "stopping", actions: RECONFIGURE },
              "server.stop": { target: "stopping", actions: "markStop" },
            },
          },
          stopping: {
            tags: ["stopping"],
            entry: "terminateProcess",
            on: {
              "server.exited": [
                { guard: "restartAfterExit", target: "#serverManager.preparing", actions: "clearOutcome" },
                {
                  guard: and(["failAfterExit", "mayRestart"]),
                  target: "#serverManager.backoff",
                  actions: ["storeExit", "scheduleRestart"],
                },
                {
                  guard: and(["failAfterExit", "isSupervising"]),
                  target: "#serverManager.failed",
                  actions: ["storeExit", "storeGaveUp"],
                },
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
      backoff: {
        description: "A supervised restart waits its backoff, then starts the same configuration again.",
        tags: ["restarting"],
        entry: "emitRestarting",
        after: { restartBackoff: { target: "preparing", actions: "clearOutcome" } },
        on: { "server.start": LAUNCH, "server.restart": RELAUNCH, "server.stop": { target: "stopped" } },
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
export type ServerStatus =
  | "idle"
  | "starting"
  | "healthy"
  | "unhealthy"
  | "restarting"
  | "stopping"
  | "crashed"
  | "failed"
  | "stopped";

/** The status a snapshot stands for. */
export function serverStatusOf(snapshot: ServerManagerSnapshot): ServerStatus {
  if (snapshot.hasTag("starting")) return "starting";
  if (snapshot.hasTag("healthy")) return "healthy";
  if (snapshot.hasTag("unhealthy")) return "unhealthy";
  if (snapshot.hasTag("restarting")) return "restarting";
  if (snapshot.hasTag("stopping")) return "stopping";
  if (snapshot.matches("crashed")) return "crashed";
  if (snapshot.matches("failed")) return "failed";
  if (snapshot.matches("stopped")) return "stopped";
  return "idle";
}
