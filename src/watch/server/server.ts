/**
 * Serving the watch app over HTTP with `@hono/node-server`, on 127.0.0.1 unless told otherwise,
 * with a fresh token (printed in the URL) and a `Host` check.
 */
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import type { Hono } from "hono";
import { allowedHostNames, createWatchToken, isLoopbackHost } from "./access.ts";
import { createWatchApp } from "./app.ts";
import { readEvalTraces } from "./eval-trace.ts";
import { RunStore } from "./run-store.ts";

/** The watch server's default port: not llama-server's 8080 nor the proxy's 8081. */
export const DEFAULT_WATCH_PORT = 4141;

/** The directory runs are recorded in by default (relative to the working directory). */
export const DEFAULT_WATCH_DIR = ".forge/runs";

/** Options of `startWatchServer`. */
export interface StartWatchServerOptions {
  /** Port (default 4141; 0 picks a free one). */
  port?: number;
  /** Interface to bind (default `127.0.0.1`). */
  host?: string;
  /** Where runs are recorded, one JSONL file each (default `.forge/runs`); created if missing. */
  dir?: string;
  /** Eval traces files (`<out>.traces.jsonl`) whose runs are shown too, read-only. */
  traces?: readonly string[];
  /** The token sources must send (default: a fresh random one each start). */
  token?: string;
  /**
   * More `Host` names to answer (e.g. a DNS name the server is reached by), besides the bound
   * host, the loopback names and, on a wildcard host, this machine's name and addresses.
   */
  allowedHosts?: readonly string[];
  /** How many events of a run are held in memory (default 5,000; the run's file keeps every one). */
  maxRunEvents?: number;
  /** Bytes of updates a live stream may have waiting before its reader is dropped (default 4 MiB). */
  maxSubscriberBytes?: number;
  /** Told of skipped run file lines, failed writes and dropped readers (default: stderr). */
  onWarning?: (message: string) => void;
}

/** A listening watch server. */
export interface RunningWatchServer {
  app: Hono;
  store: RunStore;
  host: string;
  port: number;
  /** Base URL, e.g. `http://127.0.0.1:4141`. */
  url: string;
  /** The token sources send to post events (and readers, when listening beyond loopback). */
  token: string;
  /**
   * The base URL with the token, e.g. `http://127.0.0.1:4141/?token=…`: open it in a browser,
   * give it to a reporter (`createWatchReporter({ url })`, `forge proxy --watch`, `forge worker --watch`).
   */
  tokenUrl: string;
  /** Stop listening and end the live streams. */
  close(): Promise<void>;
}

/**
 * Start the watch server: a local page listing runs and showing each live.
 * @example
 * const watch = await startWatchServer({ port: 0, dir: "runs" });
 * const reporter = createWatchReporter({ url: watch.tokenUrl });
 */
export async function startWatchServer(options: StartWatchServerOptions = {}): Promise<RunningWatchServer> {
  const host = options.host ?? "127.0.0.1";
  const token = options.token ?? createWatchToken();
  const store = new RunStore(options.dir ?? DEFAULT_WATCH_DIR, {
    ...(options.maxRunEvents !== undefined && { maxRunEvents: options.maxRunEvents }),
    ...(options.onWarning && { onWarning: options.onWarning }),
  });
  for (const file of options.traces ?? []) {
    for (const { runId, events } of readEvalTraces(file)) store.load(runId, events);
  }
  const boundHost = host.includes(":") ? `[${host}]` : host;
  const port = options.port ?? DEFAULT_WATCH_PORT;
  // The Host check needs the real port, known only once listening: the app reads it lazily.
  let app: Hono | undefined;
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const started = serve(
      { fetch: (request, env) => (app as Hono).fetch(request, env), hostname: host, port },
      () => resolve(started),
    );
    started.once("error", reject);
  });
  const boundPort = (server.address() as AddressInfo).port;
  app = createWatchApp({
    store,
    token,
    // The Host check is always on: the bound name, loopback names, and on a wildcard this machine's names.
    allowedHosts: allowedHostNames(host, boundPort, options.allowedHosts),
    tokenToRead: !isLoopbackHost(host),
    ...(options.maxSubscriberBytes !== undefined && { maxSubscriberBytes: options.maxSubscriberBytes }),
    ...(options.onWarning && { onWarning: options.onWarning }),
  });
  const url = `http://${boundHost}:${boundPort}`;
  return {
    app,
    store,
    host,
    port: boundPort,
    url,
    token,
    tokenUrl: `${url}/?token=${token}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        if ("closeAllConnections" in server) server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
