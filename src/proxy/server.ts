/**
 * Serving the proxy app over HTTP with `@hono/node-server`, on 127.0.0.1 unless told otherwise.
 */
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import type { Hono } from "hono";
import { createProxy, type ProxyOptions } from "./app.ts";

const CLOSE_GRACE_MS = 2_000;

/** Options of `startProxy`. */
export interface StartProxyOptions extends ProxyOptions {
  /** Interface to bind (default `127.0.0.1`). */
  host?: string;
  /** Port (default 8081; 0 picks a free one). */
  port?: number;
}

/** A listening proxy. */
export interface RunningProxy {
  app: Hono;
  host: string;
  port: number;
  /** Base URL, e.g. `http://127.0.0.1:8081`; OpenAI clients use `${url}/v1`. */
  url: string;
  /** Stop listening, drop idle connections, and release the backend (a managed server stops). */
  close(): Promise<void>;
}

/**
 * Start the proxy.
 * @example
 * const proxy = await startProxy({ backend, port: 0 });
 * const openai = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: "unused" });
 */
export async function startProxy(options: StartProxyOptions): Promise<RunningProxy> {
  const host = options.host ?? "127.0.0.1";
  const app = createProxy(options);
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const started = serve({ fetch: app.fetch, hostname: host, port: options.port ?? 8081 }, () =>
      resolve(started),
    );
    started.once("error", reject);
  });
  const { port } = server.address() as AddressInfo;
  const urlHost = host.includes(":") ? `[${host}]` : host;
  let closing: Promise<void> | undefined;
  return {
    app,
    host,
    port,
    url: `http://${urlHost}:${port}`,
    close() {
      closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          if ("closeIdleConnections" in server) server.closeIdleConnections();
          // Requests still running get a moment to finish, then their connections are cut.
          const force = setTimeout(() => {
            if ("closeAllConnections" in server) server.closeAllConnections();
          }, CLOSE_GRACE_MS);
          force.unref();
        });
        await options.backend.close?.();
      })();
      return closing;
    },
  };
}
