/**
 * Serving the proxy app over HTTP with `@hono/node-server`, on 127.0.0.1 unless told otherwise,
 * and closing it gracefully: stop accepting, answer every request still waiting for a slot (and
 * every new one on an open connection) 503 with `Retry-After`, let the requests running finish (up
 * to the drain deadline), then release the backend.
 */
import type { ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import type { Hono } from "hono";
import { createProxy, type ProxyOptions } from "./app.ts";
import { ProxyDrain } from "./http/index.ts";

/** Default drain deadline on close: 30 s for the requests in flight to finish. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;

/** The interface and port the proxy binds unless `host` / `port` say otherwise. */
export const DEFAULT_PROXY_HOST = "127.0.0.1";
export const DEFAULT_PROXY_PORT = 8081;

/** After the drain deadline, how long the requests answered 503 get to send it before connections are cut. */
const EXPIRED_GRACE_MS = 1_000;

/** Options of `startProxy`. */
export interface StartProxyOptions extends ProxyOptions {
  /** Interface to bind (default `127.0.0.1`). */
  host?: string;
  /** Port (default 8081; 0 picks a free one). */
  port?: number;
  /**
   * How long `close()` lets the requests running finish (default 30 000 ms); past it they are
   * answered 503 with `Retry-After` (a stream already under way ends with an error event, or is cut
   * a second later). Requests still waiting in a line are answered 503 at once.
   */
  drainTimeoutMs?: number;
}

/** A listening proxy. */
export interface RunningProxy {
  app: Hono;
  host: string;
  port: number;
  /** Base URL, e.g. `http://127.0.0.1:8081`; OpenAI clients use `${url}/v1`. */
  url: string;
  /**
   * Stop accepting connections, answer the requests waiting for a slot and any new request 503
   * with `Retry-After`, let the requests running finish (answered 503 past the drain deadline),
   * then release the backend (a managed server stops).
   */
  close(): Promise<void>;
}

/**
 * Start the proxy.
 * @example
 * const proxy = await startProxy({ backend, port: 0 });
 * const openai = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: "unused" });
 */
export async function startProxy(options: StartProxyOptions): Promise<RunningProxy> {
  const host = options.host ?? DEFAULT_PROXY_HOST;
  // The address it listens on is a name clients use: a specific one is served like the loopback names.
  const wildcard = host === "0.0.0.0" || host === "::";
  const boundHost = host.includes(":") ? `[${host}]` : host;
  const allowedHosts = [...(options.allowedHosts ?? []), ...(wildcard ? [] : [boundHost])];
  const drain = options.drain ?? new ProxyDrain();
  const app = createProxy({ ...options, allowedHosts, drain });
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const started = serve(
      { fetch: app.fetch, hostname: host, port: options.port ?? DEFAULT_PROXY_PORT },
      () => resolve(started),
    );
    started.once("error", reject);
  });
  const { port } = server.address() as AddressInfo;
  // Answers not yet sent, so that closing knows when the last request in flight is done.
  const inFlight = new Set<ServerResponse>();
  let draining: (() => void) | undefined;
  server.on("request", (_request, response: ServerResponse) => {
    inFlight.add(response);
    response.once("close", () => {
      inFlight.delete(response);
      if (draining) setImmediate(draining);
    });
  });
  let closing: Promise<void> | undefined;
  return {
    app,
    host,
    port,
    url: `http://${boundHost}:${port}`,
    close() {
      closing ??= (async () => {
        // Waiting requests are refused with 503 now, not reset at the deadline.
        drain.begin();
        await new Promise<void>((resolve) => {
          const cutAll = () => {
            if ("closeAllConnections" in server) server.closeAllConnections();
          };
          // Once nothing is in flight, keep-alive connections are idle: close them all.
          draining = () => {
            if (inFlight.size === 0) cutAll();
            else if ("closeIdleConnections" in server) server.closeIdleConnections();
          };
          // Past the drain deadline, the requests still running are answered 503 (their work is
          // aborted); whatever has not ended a moment later (a stream under way) is cut.
          let cut: ReturnType<typeof setTimeout> | undefined;
          const expire = setTimeout(() => {
            drain.expire();
            cut = setTimeout(cutAll, EXPIRED_GRACE_MS);
            cut.unref();
          }, options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS);
          expire.unref();
          server.close(() => {
            clearTimeout(expire);
            clearTimeout(cut);
            resolve();
          });
          draining();
        });
        await options.backend.close?.();
      })();
      return closing;
    },
  };
}
