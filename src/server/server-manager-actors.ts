/**
 * The server manager's invoked actors: the llama-server process (`fromCallback`: it spawns,
 * reports its pid and exit, and terminates on request), the port check before a spawn, the
 * readiness probe (`/health`, then `/props`), the liveness probe of a healthy server, and
 * Ollama's reachability check and model unload.
 * Factories take their dependencies; data enters through `input`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { type EventObject, fromCallback, fromPromise } from "xstate";
import { fetchServerProps, type ServerProps } from "../clients/llama-server/props.ts";
import { OllamaClient } from "../clients/ollama/client.ts";
import { PortInUseError, portInUseMessage, type ServerExit, ServerStartError } from "./errors.ts";
import { withParentDeathSignal } from "./parent-death.ts";
import { describePortOccupant, findFreePort, isPortFree } from "./ports.ts";
import { LogTail } from "./process-log.ts";
import type { SupervisionPolicy } from "./supervision.ts";

/** Events the process actor sends back to the machine. */
export type ServerProcessEvent =
  | { type: "server.spawned"; pid: number }
  | { type: "server.exited"; exit: ServerExit };

/** Commands the process actor accepts: SIGTERM then SIGKILL after the grace, or SIGKILL now. */
export type ServerProcessCommand = { type: "process.terminate" } | { type: "process.kill" };

/** Input of the process actor. */
export interface ServerProcessInput {
  binaryPath: string;
  args: string[];
  /** Grace between SIGTERM and SIGKILL. */
  stopTimeoutMs: number;
  /** llama-server's API key, passed as `LLAMA_API_KEY` (not on the command line, which `ps` shows). */
  apiKey?: string | null;
}

/** What the process actor needs besides its input. */
export interface ServerProcessDeps {
  /** Lifecycle lines (spawn, SIGTERM, SIGKILL). */
  log: (line: string) => void;
  /** Every line the server prints, if wanted. */
  onServerLine?: (line: string) => void;
}

// Children still running when Node exits are killed, so a failed test never leaks a server.
const liveChildren = new Set<ChildProcess>();
let exitHookInstalled = false;
function track(child: ChildProcess): void {
  liveChildren.add(child);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const live of liveChildren) live.kill("SIGKILL");
  });
}

/**
 * The server process. Sends `server.spawned` once it runs and `server.exited` once it is gone
 * (after its output closed, so the tail is complete). `process.terminate` sends SIGTERM, then
 * SIGKILL after `stopTimeoutMs`; stopping the actor without that (the machine left the state)
 * does the same without waiting.
 */
export function createServerProcessLogic(deps: ServerProcessDeps) {
  return fromCallback<ServerProcessCommand, ServerProcessInput, ServerProcessEvent>(
    ({ input, sendBack, receive }) => {
      const tail = new LogTail();
      let exited = false;
      let killTimer: NodeJS.Timeout | undefined;
      // The kernel kills the server when this process dies, even by SIGKILL (Linux with setpriv).
      const { command, args } = withParentDeathSignal(input.binaryPath, input.args);
      deps.log(`spawning ${command} ${args.join(" ")}${input.apiKey ? " (API key in LLAMA_API_KEY)" : ""}`);
      const env = input.apiKey ? { ...process.env, LLAMA_API_KEY: input.apiKey } : process.env;
      const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], env });
      track(child);
      const onOutput = (chunk: Buffer) => {
        for (const line of tail.push(chunk.toString("utf8"))) deps.onServerLine?.(line);
      };
      child.stdout?.on("data", onOutput);
      child.stderr?.on("data", onOutput);
      child.once("spawn", () => {
        if (child.pid !== undefined) sendBack({ type: "server.spawned", pid: child.pid });
      });
      const finish = (exit: Omit<ServerExit, "pid" | "stderrTail">) => {
        if (exited) return;
        exited = true;
        clearTimeout(killTimer);
        liveChildren.delete(child);
        sendBack({
          type: "server.exited",
          exit: { pid: child.pid ?? null, stderrTail: tail.text(), ...exit },
        });
      };
      child.once("error", (error) => {
        // Only a failed spawn leaves no process behind; other errors are followed by "close".
        if (child.pid === undefined) finish({ exitCode: null, signal: null, spawnError: error.message });
      });
      child.once("close", (exitCode, signal) => finish({ exitCode, signal }));

      const terminate = (graceMs: number) => {
        if (exited) return;
        child.kill("SIGTERM");
        killTimer = setTimeout(() => {
          if (exited) return;
          deps.log(`pid ${String(child.pid)} did not exit ${graceMs} ms after SIGTERM; sending SIGKILL`);
          child.kill("SIGKILL");
        }, graceMs);
        killTimer.unref();
      };
      receive((command) => {
        if (exited) return;
        if (command.type === "process.kill") {
          deps.log(`killing pid ${String(child.pid)} with SIGKILL`);
          child.kill("SIGKILL");
          return;
        }
        deps.log(`stopping pid ${String(child.pid)} with SIGTERM`);
        terminate(input.stopTimeoutMs);
      });
      return () => terminate(input.stopTimeoutMs);
    },
  );
}

/** Input of the port check. */
export interface PreparePortInput {
  host: string;
  /** The port asked for; `null` picks one. */
  requested: number | null;
  /** The port of the previous launch, kept on restart while it is free. */
  previous: number | null;
}

/**
 * Choose the port of the next launch: the requested one if it is free (else `PortInUseError`
 * naming who holds it), the previous one if still free, else a fresh free one.
 */
export const preparePortLogic = fromPromise<number, PreparePortInput>(async ({ input }) => {
  const { host, requested, previous } = input;
  if (requested !== null) {
    if (await isPortFree(host, requested)) return requested;
    const occupant = await describePortOccupant(`http://${host}:${requested}`);
    throw new PortInUseError({
      kind: "port_in_use",
      port: requested,
      message: portInUseMessage(host, requested, occupant),
    });
  }
  if (previous !== null && (await isPortFree(host, previous))) return previous;
  return findFreePort(host);
});

/** Input of the readiness probe. */
export interface AwaitReadyInput {
  baseUrl: string;
  timeoutMs: number;
  pollMs?: number;
  /** Sent as a Bearer token to `/health` and `/props`. */
  apiKey?: string | null;
}

/**
 * Poll `/health` until it answers 200 (llama-server answers 503 while loading the model), then
 * read `/props`. Aborted when the machine leaves the state (the process exited, or a stop).
 */
export const awaitReadyLogic = fromPromise<ServerProps, AwaitReadyInput>(async ({ input, signal }) => {
  const deadline = Date.now() + input.timeoutMs;
  while (Date.now() < deadline) {
    signal.throwIfAborted();
    const attempt = deadlineSignal(signal, 2_000);
    const status = await fetch(`${input.baseUrl}/health`, {
      signal: attempt.signal,
      headers: bearer(input.apiKey),
    }).then(
      async (response) => {
        // Read nothing, but release the connection: the poll runs every 100 ms while a model loads.
        await response.body?.cancel();
        return response.status;
      },
      () => 0,
    );
    attempt.clear();
    if (status === 200) {
      const read = deadlineSignal(signal, 5_000);
      try {
        return await fetchServerProps(input.baseUrl, read.signal, input.apiKey);
      } finally {
        read.clear();
      }
    }
    await new Promise((resolve) => setTimeout(resolve, input.pollMs ?? 100));
  }
  throw new ServerStartError({
    kind: "start_timeout",
    message: `llama-server at ${input.baseUrl} did not answer /health with 200 within ${input.timeoutMs} ms. Raise startTimeoutMs for large models.`,
  });
});

function bearer(apiKey: string | null | undefined): Record<string, string> {
  return apiKey ? { authorization: `Bearer ${apiKey}` } : {};
}

/**
 * A signal that aborts when `parent` does or after `ms`, on a timer this module holds. (On Node 20
 * an `AbortSignal.timeout` combined with `AbortSignal.any` was seen never to fire: a probe of a
 * stopped server then waited forever.)
 */
function deadlineSignal(parent: AbortSignal, ms: number): { signal: AbortSignal; clear: () => void } {
  const controller = new AbortController();
  const abort = () =>
    controller.abort(parent.aborted ? parent.reason : new Error(`no answer within ${ms} ms`));
  const timer = setTimeout(abort, ms);
  if (parent.aborted) abort();
  else parent.addEventListener("abort", abort, { once: true });
  return {
    signal: controller.signal,
    clear: () => {
      clearTimeout(timer);
      parent.removeEventListener("abort", abort);
    },
  };
}

/** Input of the liveness probe. */
export interface LivenessProbeInput {
  baseUrl: string;
  apiKey?: string | null;
  /** The probe's cadence, deadline and tolerance; `null` (or an interval of 0): no probe. */
  policy: SupervisionPolicy | null;
}

/** What the liveness probe reports: the server failed `probeFailures` probes in a row. */
export type LivenessProbeEvent = { type: "server.unresponsive"; message: string };

/**
 * Ask `/health` every `probeIntervalMs`, each within `probeTimeoutMs`; after `probeFailures`
 * failures in a row (no answer in time, or not 200) report `server.unresponsive` once and stop.
 * A stopped (SIGSTOP) or deadlocked server still accepts connections but never answers, so the
 * deadline is what notices it.
 */
export const livenessProbeLogic = fromCallback<EventObject, LivenessProbeInput, LivenessProbeEvent>(
  ({ input, sendBack }) => {
    const policy = input.policy;
    if (policy === null || policy.probeIntervalMs === 0) return;
    const controller = new AbortController();
    let failures = 0;
    let last = "";
    let timer: NodeJS.Timeout | undefined;
    const probe = async () => {
      const attempt = deadlineSignal(controller.signal, policy.probeTimeoutMs);
      const status = await fetch(`${input.baseUrl}/health`, {
        signal: attempt.signal,
        headers: bearer(input.apiKey),
      })
        .then(async (response) => {
          await response.body?.cancel();
          return response.status;
        })
        .catch(() => 0)
        .finally(attempt.clear);
      if (controller.signal.aborted) return;
      if (status === 200) {
        failures = 0;
      } else {
        failures += 1;
        last = status === 0 ? `no answer within ${policy.probeTimeoutMs} ms` : `HTTP ${status}`;
      }
      if (failures >= policy.probeFailures) {
        sendBack({
          type: "server.unresponsive",
          message:
            `llama-server at ${input.baseUrl} failed ${failures} liveness probes in a row (GET /health, ` +
            `last: ${last}); killing it to restart it.`,
        });
        return;
      }
      timer = setTimeout(() => void probe(), policy.probeIntervalMs);
    };
    timer = setTimeout(() => void probe(), policy.probeIntervalMs);
    return () => {
      controller.abort();
      clearTimeout(timer);
    };
  },
);

/** Input of the Ollama actors. */
export interface OllamaInput {
  baseUrl: string;
  model: string | null;
}

/** Check that Ollama answers `GET /api/version`; nothing is spawned. */
export const ollamaConnectLogic = fromPromise<void, OllamaInput>(async ({ input, signal }) => {
  const url = `${input.baseUrl}/api/version`;
  const attempt = deadlineSignal(signal, 5_000);
  const status = await fetch(url, { signal: attempt.signal })
    .then(
      (response) => response.status,
      () => 0,
    )
    .finally(attempt.clear);
  if (status !== 200) {
    throw new ServerStartError({
      kind: "unreachable",
      message: `Ollama did not answer at ${url} (${status === 0 ? "no connection" : `HTTP ${status}`}). Start it with \`ollama serve\` or pass its URL as ollamaUrl.`,
    });
  }
});

/** Unload the model from Ollama's memory (`keep_alive: 0`). */
export const ollamaUnloadLogic = fromPromise<void, OllamaInput>(async ({ input, signal }) => {
  if (input.model === null) return;
  const client = new OllamaClient({ model: input.model, baseUrl: input.baseUrl, logger: () => {} });
  await client.unload({ signal });
});
