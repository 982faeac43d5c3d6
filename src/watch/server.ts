/**
 * Serving the watch app over HTTP with `@hono/node-server`, on 127.0.0.1 unless told otherwise.
 */
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import type { Hono } from "hono";
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
}

/** A listening watch server. */
export interface RunningWatchServer {
  app: Hono;
  store: RunStore;
  host: string;
  port: number;
  /** Base URL, e.g. `http://127.0.0.1:4141`: open it in a browser, give it to a reporter. */
  url: string;
  /** Stop listening and end the live streams. */
  close(): Promise<void>;
}

/**
 * Start the watch server: a local page listing runs and showing each live.
 * @example
 * const watch = await startWatchServer({ port: 0, dir: "runs" });
 * const reporter = createWatchReporter({ url: watch.url });
 */
export async function startWatchServer(options: StartWatchServerOptions = {}): Promise<RunningWatchServer> {
  const host = options.host ?? "127.0.0.1";
  const store = new RunStore(options.dir ?? DEFAULT_WATCH_DIR);
  for (const file of options.traces ?? []) {
    for (const { runId, events } of readEvalTraces(file)) store.load(runId, events);
  }
  const boundHost = host.includes(":") ? `[${host}]` : host;
  const wildcard = host === "0.0.0.0" || host === "::";
  let port = options.port ?? DEFAULT_WATCH_PORT;
  const hosts = () => {
    if (wildcard) return undefined;
    const loopback = ["127.0.0.1", "localhost", "[::1]"];
    return [...new Set([boundHost, ...(host === "127.0.0.1" || host === "::1" ? loopback : [])])].map(
      (name) => `${name}:${port}`,
    );
  };
  // The Host check needs the real port, known only once listening: the app reads it lazily.
  let app: Hono | undefined;
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const started = serve(
      { fetch: (request, env) => (app as Hono).fetch(request, env), hostname: host, port },
      () => resolve(started),
    );
    started.once("error", reject);
  });
  port = (server.address() as AddressInfo).port;
  const allowedHosts = hosts();
  app = createWatchApp({ store, ...(allowedHosts && { allowedHosts }) });
  return {
    app,
    store,
    host,
    port,
    url: `http://${boundHost}:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        if ("closeAllConnections" in server) server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
