/**
 * Errors of the server lifecycle, and the JSON failure record the server-manager machine keeps
 * in its context (context is data) from which they are rebuilt.
 */
import { ContextDiscoveryError, ForgeError } from "../core/errors.ts";

/** Why a server is not running, as plain data. */
export interface ServerFailure {
  kind:
    | "port_in_use"
    | "exited_during_start"
    | "start_timeout"
    | "spawn_failed"
    | "unreachable"
    | "bad_props"
    | "unresponsive"
    | "gave_up";
  message: string;
  port?: number;
  exitCode?: number | null;
  signal?: string | null;
  stderrTail?: string;
}

/** How a server process ended. */
export interface ServerExit {
  pid: number | null;
  exitCode: number | null;
  signal: string | null;
  /** The last lines the process wrote (stdout and stderr). */
  stderrTail: string;
  /** Set when the process could not be spawned at all (ENOENT, EACCES). */
  spawnError?: string;
}

/** The server did not become ready: it exited, timed out, or could not be spawned. */
export class ServerStartError extends ForgeError {
  readonly kind: ServerFailure["kind"];
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stderrTail: string;
  constructor(failure: ServerFailure) {
    super(failure.message);
    this.kind = failure.kind;
    this.exitCode = failure.exitCode ?? null;
    this.signal = failure.signal ?? null;
    this.stderrTail = failure.stderrTail ?? "";
  }
}

/** The port the server should listen on is taken; the message names it and how to fix it. */
export class PortInUseError extends ServerStartError {
  readonly port: number;
  constructor(failure: ServerFailure & { port: number }) {
    super(failure);
    this.port = failure.port;
  }
}

/** A healthy server process exited without being asked to. */
export class ServerCrashedError extends ForgeError {
  readonly pid: number | null;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stderrTail: string;
  constructor(exit: ServerExit) {
    const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${String(exit.exitCode)}`;
    const tail = exit.stderrTail.trim();
    super(
      `llama-server (pid ${String(exit.pid)}) ${how} while it was serving. Call restart() to start it again.` +
        (tail ? `\nLast output:\n${tail}` : ""),
    );
    this.pid = exit.pid;
    this.exitCode = exit.exitCode;
    this.signal = exit.signal;
    this.stderrTail = exit.stderrTail;
  }
}

/** Rebuild the typed error of a failure record. */
export function errorOfFailure(failure: ServerFailure): ForgeError {
  if (failure.kind === "port_in_use" && failure.port !== undefined) {
    return new PortInUseError({ ...failure, port: failure.port });
  }
  if (failure.kind === "bad_props") return new ContextDiscoveryError(failure.message);
  return new ServerStartError(failure);
}

/** The message of a port conflict: which port, who holds it if known, and how to fix it. */
export function portInUseMessage(host: string, port: number, occupant: string | null): string {
  return (
    `Port ${port} on ${host} is already in use${occupant ? ` by ${occupant}` : ""}. ` +
    `Stop the process that holds it (e.g. \`lsof -i :${port}\` or \`fuser -k ${port}/tcp\`), ` +
    "pass another `port`, or leave `port` out to pick a free one."
  );
}

/** The failure record of an error thrown while starting, stopping or probing a server. */
export function failureOfError(error: unknown, fallbackKind: ServerFailure["kind"]): ServerFailure {
  if (error instanceof PortInUseError) {
    return { kind: "port_in_use", message: error.message, port: error.port };
  }
  if (error instanceof ServerStartError) {
    return {
      kind: error.kind,
      message: error.message,
      exitCode: error.exitCode,
      signal: error.signal,
      stderrTail: error.stderrTail,
    };
  }
  if (error instanceof ContextDiscoveryError) return { kind: "bad_props", message: error.message };
  return { kind: fallbackKind, message: error instanceof Error ? error.message : String(error) };
}

/** The failure record of a process that exited before it became ready. */
export function failureOfEarlyExit(exit: ServerExit, host: string, port: number): ServerFailure {
  const common = { exitCode: exit.exitCode, signal: exit.signal, stderrTail: exit.stderrTail };
  if (exit.spawnError) {
    return {
      kind: "spawn_failed",
      message: `llama-server could not be spawned: ${exit.spawnError}`,
      ...common,
    };
  }
  if (saysPortInUse(exit.stderrTail)) {
    return { kind: "port_in_use", message: portInUseMessage(host, port, null), port, ...common };
  }
  const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${String(exit.exitCode)}`;
  return {
    kind: "exited_during_start",
    message: `llama-server ${how} before it became healthy.\nLast output:\n${exit.stderrTail.trim()}`,
    ...common,
  };
}

/** Whether llama-server's output says it could not bind its port. */
export function saysPortInUse(log: string): boolean {
  return /couldn't bind HTTP server socket|address already in use|EADDRINUSE/i.test(log);
}
