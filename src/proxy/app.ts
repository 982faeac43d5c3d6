/**
 * The proxy as a Hono app: authentication, body limit, the chat routes, pass-through routes and
 * health, with every fault answered in the shape of the API the client speaks.
 */
import { timingSafeEqual } from "node:crypto";
import { type Context, Hono } from "hono";
import type { ProxyBackend } from "./backend.ts";
import { createChatService } from "./chat-service.ts";
import { errorBody, type ProxyApi, ProxyErrorKind, ProxyHttpError, toProxyHttpError } from "./errors.ts";
import { forwardToBackend } from "./passthrough.ts";
import { anthropicMessagesHandler, openAIChatHandler, type RouteDeps } from "./routes.ts";
import { SerialQueue } from "./serial-queue.ts";

/** Options of `createProxy`. */
export interface ProxyOptions {
  backend: ProxyBackend;
  /** When set, clients must send it (`Authorization: Bearer …` or `x-api-key`). Never forwarded. */
  apiKey?: string | undefined;
  /** Nudged retries per request (default 3: at most 4 LLM calls). */
  maxRetries?: number | undefined;
  /** Rescue tool calls written as text (default true). */
  rescueEnabled?: boolean | undefined;
  /** Send one request at a time to the backend, in arrival order (single-slot backends). */
  serialize?: boolean | undefined;
  /** Largest accepted request body in bytes (default 10 MiB); larger ones get 413. */
  maxBodyBytes?: number | undefined;
  /** Context budget for compaction; default: the backend's context length when it reports one. */
  budgetTokens?: number | undefined;
}

/** Default body limit: 10 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024;

/**
 * Build the proxy app. Serve it with `startProxy`, or call `app.request()` in tests.
 * @example
 * const app = createProxy({ backend: createHttpBackend({ url: "http://127.0.0.1:8080", createClient }) });
 * const response = await app.request("/v1/models");
 */
export function createProxy(options: ProxyOptions): Hono {
  const { backend } = options;
  const queue = options.serialize ? new SerialQueue() : undefined;
  const service = createChatService({
    backend,
    maxRetries: options.maxRetries ?? 3,
    rescueEnabled: options.rescueEnabled ?? true,
    budgetTokens: options.budgetTokens,
    queue,
  });
  const deps: RouteDeps = {
    backend,
    service,
    queue,
    maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
  };
  const startedAt = Date.now();
  const app = new Hono();

  app.onError((error, c) => errorResponse(c, toProxyHttpError(error)));
  app.notFound((c) =>
    errorResponse(
      c,
      new ProxyHttpError(404, ProxyErrorKind.NOT_FOUND, `No route for ${c.req.method} ${c.req.path}`),
    ),
  );

  app.get("/health", async (c) => {
    const health = await backend.health();
    return c.json(
      { status: health.status === "ok" ? "ok" : "unavailable" },
      health.status === "ok" ? 200 : 503,
    );
  });
  app.get("/forge/health", async (c) => {
    const health = await backend.health();
    return c.json({
      status: health.status === "ok" ? "ok" : "degraded",
      proxy: {
        status: "ok",
        uptimeSeconds: Math.round((Date.now() - startedAt) / 1000),
        serialize: queue !== undefined,
        queued: queue?.pending ?? 0,
        maxRetries: options.maxRetries ?? 3,
        authentication: options.apiKey !== undefined,
      },
      backend: health,
    });
  });

  if (options.apiKey !== undefined) app.use("*", authenticate(options.apiKey));
  const chat = openAIChatHandler(deps);
  app.post("/v1/chat/completions", chat);
  app.post("/chat/completions", chat);
  app.post("/v1/messages", anthropicMessagesHandler(deps));
  for (const path of ["/v1/models", "/models", "/props"]) {
    app.get(path, (c) =>
      forwardToBackend(
        backend,
        { method: "GET", path: path === "/models" ? "/v1/models" : path, signal: c.req.raw.signal },
        queue,
      ),
    );
  }
  return app;
}

/** The API a path belongs to, for the error body shape. */
export function apiOfPath(path: string): ProxyApi {
  return path.startsWith("/v1/messages") ? "anthropic" : "openai";
}

function errorResponse(c: Context, error: ProxyHttpError): Response {
  if (error.retryAfterSeconds !== undefined) c.header("retry-after", String(error.retryAfterSeconds));
  // 499 (client gone) is nginx's convention; nobody reads it, but it must not look like a 5xx.
  return c.json(errorBody(apiOfPath(c.req.path), error), error.status as 400);
}

/** Accept `Authorization: Bearer <key>` or `x-api-key: <key>`, compared in constant time. */
function authenticate(apiKey: string) {
  const expected = Buffer.from(apiKey);
  const matches = (candidate: string | undefined) => {
    if (candidate === undefined) return false;
    const given = Buffer.from(candidate);
    return given.length === expected.length && timingSafeEqual(given, expected);
  };
  return async (c: Context, next: () => Promise<void>) => {
    const authorization = c.req.header("authorization");
    const bearer = authorization?.match(/^Bearer\s+(.+)$/i)?.[1]?.trim();
    if (matches(bearer) || matches(c.req.header("x-api-key"))) return next();
    const message =
      authorization === undefined && c.req.header("x-api-key") === undefined
        ? "Missing API key: send Authorization: Bearer <key> or x-api-key"
        : "Invalid API key";
    return errorResponse(c, new ProxyHttpError(401, ProxyErrorKind.AUTHENTICATION, message));
  };
}
