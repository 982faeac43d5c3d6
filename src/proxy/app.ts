/**
 * The proxy as a Hono app: authentication, body limit, the chat routes, pass-through routes and
 * health, with every fault answered in the shape of the API the client speaks.
 */

import { timingSafeEqual } from "node:crypto";
import type { ServerResponse } from "node:http";
import { type Context, Hono } from "hono";
import { requestId } from "hono/request-id";
import type { ReasoningReplay } from "../core/reasoning-replay.ts";
import { type RetryBounds, retryBoundsSchema } from "../guardrails/bounded-retry.ts";
import { type CallLoopRules, callLoopRulesSchema } from "../guardrails/call-loop.ts";
import { DEFAULT_LIMITS } from "../guardrails/limits.ts";
import { type PermissionPolicyInput, permissionPolicySchema } from "../guardrails/permission-policy.ts";
import type { RepairToolCall } from "../guardrails/repair.ts";
import { toolNarrowingRulesSchema } from "../guardrails/tool-narrowing.ts";
import type { TemplateCallFormat } from "../prompts/chat-template.ts";
import { type AccessLogOptions, observeRequests } from "./access-log.ts";
import { anthropicDialect, createTokenCounter } from "./anthropic/index.ts";
import type { BackendHealth, ProxyBackend } from "./backend/index.ts";
import { forwardToBackend } from "./backend/index.ts";
import { hasFirstTokens } from "./call-confidence.ts";
import { createChatService, type ProsePolicy } from "./chat-service.ts";
import {
  errorBody,
  type ProxyApi,
  ProxyConfigError,
  ProxyErrorKind,
  ProxyHttpError,
  toProxyHttpError,
} from "./errors.ts";
import {
  AdmissionGate,
  BodyReclaimer,
  DEFAULT_MAX_JSON_DEPTH,
  DEFAULT_RECLAIM_AFTER_BYTES,
  guardHostAndOrigin,
  ProxyDrain,
  RequestDeadline,
  refuseWhileDraining,
  SerialGate,
} from "./http/index.ts";
import { ProxyMetrics } from "./metrics.ts";
import { type ObserveProxyRequest, observeChatService } from "./observed-requests.ts";
import { openAIDialect } from "./openai/index.ts";
import { requestStatsOf } from "./request-stats.ts";
import { responsesDialect } from "./responses/index.ts";
import { anthropicCountTokensHandler, dialectHandler, type RouteDeps } from "./routes.ts";
import { type ProxyWatchOptions, watchChatService } from "./watch.ts";

/** Options of `createProxy`. */
export interface ProxyOptions {
  backend: ProxyBackend;
  /** When set, clients must send it (`Authorization: Bearer …` or `x-api-key`). Never forwarded. */
  apiKey?: string | undefined;
  /** Nudged retries per request (default 3: at most 4 LLM calls). */
  maxRetries?: number | undefined;
  /** Rescue tool calls written as text (default true). */
  rescueEnabled?: boolean | undefined;
  /** Asked before a nudge to repair a response (see `WorkflowRunnerOptions.repairToolCall`). */
  repairToolCall?: RepairToolCall | undefined;
  /** The retry after a prose answer asks the backend for a tool call (`tool_choice: "required"`; default true). */
  forceToolChoiceOnRetry?: boolean | undefined;
  /**
   * Under `tool_choice: auto`, `answer` (default) takes a text answer that shows no sign of a call
   * attempt as the answer at once, with no nudge; `nudge` nudges every text answer, as before 0.2
   * (docs/decisions/024-prose-policy.md).
   */
  prosePolicy?: ProsePolicy | undefined;
  /**
   * Most calls the parallel follow-up may bring an answer to: after an answer with calls, the model
   * continues its own turn until it adds no new call, up to this many calls (default 1: off;
   * docs/decisions/026-parallel-follow-up.md).
   */
  followUpMaxCalls?: number | undefined;
  /**
   * The call-confidence gate (docs/decisions/040-call-confidence.md): under `tool_choice: auto`, a
   * call rescued from the text of a request's first answer is taken only when the model was at
   * least this likely (0–1) to open its answer with a call, as the backend's logprobs of the same
   * prompt's first token tell; otherwise the request is answered in text, asked again without
   * tools. Absent: off. Needs an OpenAI-compatible backend reporting logprobs (llama-server, vLLM);
   * `createProxy` throws `ProxyConfigError` otherwise. 0.5 is what BFCL was measured with.
   */
  callConfidence?: number | undefined;
  /**
   * Decline invented calls (docs/decisions/041-grounded-calls.md): under `tool_choice: auto`, when
   * a request's first answer holds calls rescued from its text and each is invented (a required
   * argument's value, or every value of the call, appears nowhere in the system prompt, a user
   * message or a tool result; enum members, defaults and booleans aside), the calls are declined
   * and the request is answered in text.
   * Default false: meant for question answering, where a call's values come from the question; an
   * agent's first exploratory command (`ls -la`) has none.
   */
  groundedCalls?: boolean | undefined;
  /**
   * Whether the proxy's `respond` tool goes upstream where the prose policy takes a text answer
   * (`tool_choice: auto` or none, `prosePolicy: "answer"`). Default true. False sends the client's
   * tools alone there: a prompt shorter by the tool's definition (about 80 tokens on Qwen2.5), the
   * model answers in text natively, and a `respond` call is still accepted. Under `tool_choice:
   * required` or `prosePolicy: "nudge"` it always goes (docs/decisions/042-respond-upstream.md).
   */
  respondUpstream?: boolean | undefined;
  /**
   * How the backend's model writes a tool call, read from its chat template (`callFormatOfServer`
   * for llama-server, `callFormatFromTemplate` for any template): the rescue reads it before the
   * built-in formats (docs/decisions/035-call-format-from-the-chat-template.md). `forge proxy`
   * reads it from a llama-server backend by default (`--chat-template`). Absent: built-in formats only.
   */
  callFormat?: TemplateCallFormat | null | undefined;
  /**
   * Which of the reasoning blocks clients send back (OpenAI `reasoning_content`, Anthropic
   * `thinking`) go upstream with the history: `none` (default: what earlier versions did),
   * `keep-last` or `full`.
   */
  reasoningReplay?: ReasoningReplay | undefined;
  /** Send one request at a time to the backend, in arrival order (single-slot backends). */
  serialize?: boolean | undefined;
  /** Largest accepted request body in bytes (default 10 MiB); larger ones get 413. */
  maxBodyBytes?: number | undefined;
  /** Context budget for compaction; default: the backend's context length when it reports one. */
  budgetTokens?: number | undefined;
  /** Total deadline of a request in milliseconds, all retries included (default 0: none); 504 past it. */
  deadlineMs?: number | undefined;
  /** Deepest nesting of arrays and objects accepted in a body (default 64); 400 deeper. */
  maxJsonDepth?: number | undefined;
  /** Requests served at once (default 64); more wait in line. */
  maxInFlight?: number | undefined;
  /**
   * Request body bytes served at once (default 16 MiB): a request weighs its `content-length` (the
   * body limit when it declares none); more wait in line. One body larger than this runs alone.
   */
  maxBodyMemoryBytes?: number | undefined;
  /** Requests that may wait, in each of the lines above and for `serialize` (default 256); more get 503. */
  maxQueue?: number | undefined;
  /**
   * `Host` names served besides localhost, 127.0.0.1 and [::1] (`name` or `name:port`; `*`: any);
   * others get 421. Without `apiKey`, browser requests from another origin get 403.
   */
  allowedHosts?: readonly string[] | undefined;
  /** One line per request (id, route, model, status, times, retries, rescues, nudges, compactions); default none. */
  accessLog?: AccessLogOptions | undefined;
  /**
   * Bytes of large request bodies (1 MiB and up) served between two full garbage collections that
   * the proxy asks V8 for; default 16 MiB, 0: leave it to V8 (which lets such garbage grow to
   * several times the live heap). See `BodyReclaimer`.
   */
  reclaimAfterBytes?: number | undefined;
  /**
   * The call-loop guard (ADR 020): the same call with the same result `threshold` times in a row
   * (default 3) gets a note, then the tool is left out, then the turn ends with a text answer.
   * Default on; `false`: off.
   */
  loopGuard?: Partial<CallLoopRules> | false | undefined;
  /**
   * Allow and deny rules on tool calls (ADR 021): a denied call is answered to the model with a
   * `[Denied]` reply and it chooses again; default none (every call allowed). See `PERMISSION_PRESETS`.
   */
  permissions?: PermissionPolicyInput | undefined;
  /**
   * Bounds on nudged retries (ADR 022): a retry's `max_tokens` at most max(256, 4 × the first
   * answer's tokens), and generations cut off when their text loops. Default on; `false`: off.
   */
  retryBounds?: Partial<RetryBounds> | false | undefined;
  /**
   * Read the call a text answer ends its unclosed `<think>` with, when nothing follows it and it is
   * complete (ADR 027); counted as `think_calls`. Default false: reasoning is dropped, calls in it too.
   */
  thinkCalls?: boolean | undefined;
  /**
   * Tool-set narrowing (ADR 028): a request with more than `maxTools` tools is sent with the
   * `maxTools` most relevant to its latest user turn and recent calls (BM25), plus `alwaysOffer`;
   * a call to a tool left out is still accepted. Default none (every tool is sent).
   */
  toolNarrowing?: { maxTools: number; alwaysOffer?: readonly string[] | undefined } | undefined;
  /** Report each guarded request as a run to a watch server (`forge watch`); default none. */
  watch?: ProxyWatchOptions | undefined;
  /**
   * Observe each guarded request's run (its LLM calls, nudges, compactions) and its end, e.g.
   * `otelObserver(…).observeRequest` for OpenTelemetry spans; default none.
   */
  observeRequest?: ObserveProxyRequest | undefined;
  /**
   * The drain switch (`startProxy` passes its own): once `begin()` is called, requests waiting for
   * a slot and new requests get 503 with `Retry-After`; those running finish. Default: a private one.
   */
  drain?: ProxyDrain | undefined;
}

/** Default in-flight cap: 64 requests (above a single-GPU server's slots, so it only bounds floods). */
export const DEFAULT_MAX_IN_FLIGHT = 64;
/** Default waiting line: 256 requests. */
export const DEFAULT_MAX_QUEUE = 256;
/**
 * Default request body bytes in flight: 16 MiB. A body costs four to five times its size while it
 * is served (its text, the parsed content, the history sent on and their encodings), so 16 MiB keeps
 * one 9 MiB request at a time under 300 MB of RSS, and still lets a hundred 128 KB (32k-token)
 * requests through at once. See docs/benchmarks.md ("Deadlines and limits").
 */
export const DEFAULT_MAX_BODY_MEMORY_BYTES = 16 * 1024 * 1024;

/** The header that carries a request's id: the client's when sane (word characters, `-`, `=`; 128 at most), else a UUID. */
const REQUEST_ID_HEADER = "x-request-id";

/** The routes that run the chat service, each behind the admission gate. */
const CHAT_PATHS = [
  "/v1/chat/completions",
  "/chat/completions",
  "/v1/messages",
  "/v1/responses",
  "/responses",
];

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
  const maxQueue = options.maxQueue ?? DEFAULT_MAX_QUEUE;
  const serialGate = options.serialize ? new SerialGate({ maxWaiting: maxQueue }) : undefined;
  const inFlight = new AdmissionGate({
    capacity: options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT,
    maxWaiting: maxQueue,
    name: "the --max-in-flight queue",
  });
  const bodyMemory = new AdmissionGate({
    capacity: options.maxBodyMemoryBytes ?? DEFAULT_MAX_BODY_MEMORY_BYTES,
    maxWaiting: maxQueue,
    name: "the --max-body-memory queue",
  });
  const drain = options.drain ?? new ProxyDrain();
  for (const line of [serialGate, inFlight, bodyMemory]) if (line) drain.register(line);
  const chatService = createChatService({
    backend,
    maxRetries: options.maxRetries ?? DEFAULT_LIMITS.maxRetriesPerStep,
    rescueEnabled: options.rescueEnabled ?? true,
    repairToolCall: options.repairToolCall,
    forceToolChoiceOnRetry: options.forceToolChoiceOnRetry,
    prosePolicy: options.prosePolicy,
    followUpMaxCalls: options.followUpMaxCalls,
    callConfidence: checkedCallConfidence(options.callConfidence, backend),
    groundedCalls: options.groundedCalls,
    respondUpstream: options.respondUpstream,
    callFormat: options.callFormat,
    reasoningReplay: options.reasoningReplay,
    budgetTokens: options.budgetTokens,
    serialGate,
    loopGuard: options.loopGuard === false ? undefined : callLoopRulesSchema.parse(options.loopGuard ?? {}),
    permissions: options.permissions && permissionPolicySchema.parse(options.permissions),
    retryBounds:
      options.retryBounds === false ? undefined : retryBoundsSchema.parse(options.retryBounds ?? {}),
    thinkCalls: options.thinkCalls,
    narrowing: options.toolNarrowing && toolNarrowingRulesSchema.parse(options.toolNarrowing),
  });
  const observed = options.observeRequest
    ? observeChatService(chatService, options.observeRequest)
    : chatService;
  const service = options.watch ? watchChatService(observed, options.watch) : observed;
  const deps: RouteDeps = {
    backend,
    service,
    countTokens: createTokenCounter(backend, { reasoningReplay: options.reasoningReplay }),
    serialGate,
    maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    maxJsonDepth: options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH,
    deadlineMs: options.deadlineMs ?? 0,
    drainSignal: drain.expired,
    warn: (line) => console.warn(line),
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

  // Every answer, refusals included, carries an id (the client's when sane) and is counted.
  const metrics = new ProxyMetrics();
  app.use("*", requestId({ headerName: REQUEST_ID_HEADER, limitLength: 128 }));
  app.use("*", observeRequests(metrics, options.accessLog));
  app.use("*", refuseWhileDraining(drain, errorResponse));
  // Before every route, health included: a rebound name must not even read the proxy's state.
  app.use(
    "*",
    guardHostAndOrigin(
      { allowedHosts: options.allowedHosts ?? [], checkOrigin: options.apiKey === undefined },
      errorResponse,
    ),
  );
  app.get("/health", async (c) => {
    const health = await backend.health();
    return c.json(
      { status: health.status === "ok" ? "ok" : "unavailable" },
      health.status === "ok" ? 200 : 503,
    );
  });
  const isOperator = options.apiKey === undefined ? () => false : carriesKey(options.apiKey);
  app.get("/forge/health", async (c) => {
    const health = await backend.health();
    const status = health.status === "ok" ? "ok" : "degraded";
    // The backend's address and the settings only for the key's holder: a managed llama-server's port must stay unknown.
    if (!isOperator(c)) return c.json(publicHealth(status, health, serialGate?.pending ?? 0));
    return c.json({
      status,
      proxy: {
        status: "ok",
        uptimeSeconds: Math.round((Date.now() - startedAt) / 1000),
        serialize: serialGate !== undefined,
        queued: serialGate?.pending ?? 0,
        maxRetries: options.maxRetries ?? DEFAULT_LIMITS.maxRetriesPerStep,
        authentication: options.apiKey !== undefined,
      },
      backend: health,
    });
  });

  if (options.apiKey !== undefined) app.use("*", authenticate(options.apiKey));
  app.get("/forge/metrics", async (c) => {
    const { body, contentType } = await metrics.exposition();
    return c.body(body, 200, { "content-type": contentType });
  });
  const reclaimer = new BodyReclaimer(options.reclaimAfterBytes ?? DEFAULT_RECLAIM_AFTER_BYTES, () =>
    metrics.collectionRequested(),
  );
  const gate = admit(inFlight, bodyMemory, reclaimer, deps.maxBodyBytes);
  for (const path of [...CHAT_PATHS, ...COUNT_TOKENS_PATHS]) app.use(path, gate);
  for (const path of ["/v1/models", "/models", "/props"]) app.use(path, gate);
  const chat = dialectHandler(openAIDialect, deps);
  app.post("/v1/chat/completions", chat);
  app.post("/chat/completions", chat);
  app.post("/v1/messages", dialectHandler(anthropicDialect, deps));
  const responses = dialectHandler(responsesDialect, deps);
  app.post("/v1/responses", responses);
  app.post("/responses", responses);
  const countTokens = anthropicCountTokensHandler(deps);
  for (const path of COUNT_TOKENS_PATHS) app.post(path, countTokens);
  for (const path of ["/v1/models", "/models", "/props"]) {
    app.get(path, (c) =>
      forwardToBackend(
        backend,
        { method: "GET", path: path === "/models" ? "/v1/models" : path },
        serialGate,
        new RequestDeadline(c.req.raw.signal, deps.deadlineMs, deps.drainSignal),
        requestStatsOf(c),
      ),
    );
  }
  return app;
}

/** Anthropic's token counting, with and without `/v1` (as for the model list). */
const COUNT_TOKENS_PATHS = ["/v1/messages/count_tokens", "/messages/count_tokens"];

/** The API a path belongs to, for the error body shape. */
export function apiOfPath(path: string): ProxyApi {
  return path.startsWith("/v1/messages") || path.startsWith("/messages") ? "anthropic" : "openai";
}

function errorResponse(c: Context, error: ProxyHttpError): Response {
  if (error.retryAfterSeconds !== undefined) c.header("retry-after", String(error.retryAfterSeconds));
  if (error.shouldRetry !== undefined) c.header("x-should-retry", String(error.shouldRetry));
  // 499 (client gone) is nginx's convention; nobody reads it, but it must not look like a 5xx.
  return c.json(errorBody(apiOfPath(c.req.path), error), error.status as 400);
}

/**
 * Hold an in-flight slot, and room for the body in the body memory budget, from admission until
 * the answer has been sent (the response's `close`, so a streamed answer counts until its end) or,
 * in-process, until the handler returns.
 */
function admit(
  inFlight: AdmissionGate,
  bodyMemory: AdmissionGate,
  reclaimer: BodyReclaimer,
  maxBodyBytes: number,
) {
  return async (c: Context, next: () => Promise<void>) => {
    const signal = c.req.raw.signal;
    const declared = Number(c.req.header("content-length") ?? Number.NaN);
    const bodyBytes = c.req.method !== "POST" ? 0 : Number.isFinite(declared) ? declared : maxBodyBytes;
    const acquire = async () => {
      const releaseSlot = await inFlight.acquire(signal);
      if (bodyBytes === 0) return releaseSlot;
      try {
        const weight = Math.min(bodyBytes, maxBodyBytes);
        const releaseMemory = await bodyMemory.acquire(signal, weight);
        return () => {
          releaseMemory();
          releaseSlot();
          reclaimer.served(weight);
        };
      } catch (error) {
        releaseSlot();
        throw error;
      }
    };
    const release = await acquire().catch((error: unknown) => {
      if (!signal.aborted) throw error;
      throw new ProxyHttpError(
        499,
        ProxyErrorKind.CLIENT_CLOSED,
        "Client closed the request while it waited",
      );
    });
    const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
    if (outgoing) outgoing.once("close", release);
    try {
      await next();
    } finally {
      if (!outgoing) release();
    }
  };
}

/**
 * `/forge/health` for anyone without the proxy's key (or when the proxy has none): statuses and
 * counts only, no backend address, pid, model path or settings.
 */
function publicHealth(status: string, health: BackendHealth, queued: number) {
  const detail = health.detail;
  return {
    status,
    proxy: { status: "ok", queued },
    backend: {
      status: health.status,
      format: health.format,
      ...(health.httpStatus !== undefined && { httpStatus: health.httpStatus }),
      ...(detail?.managed === true && {
        detail: { managed: true, status: detail.status, restarts: detail.restarts },
      }),
    },
  };
}

/** Whether a request carries `apiKey` (`Authorization: Bearer <key>` or `x-api-key`), compared in constant time. */
function carriesKey(apiKey: string) {
  const expected = Buffer.from(apiKey);
  const matches = (candidate: string | undefined) => {
    if (candidate === undefined) return false;
    const given = Buffer.from(candidate);
    return given.length === expected.length && timingSafeEqual(given, expected);
  };
  return (c: Context) => {
    const authorization = c.req.header("authorization");
    const bearer = authorization?.match(/^Bearer\s+(.+)$/i)?.[1]?.trim();
    return matches(bearer) || matches(c.req.header("x-api-key"));
  };
}

/** Accept `Authorization: Bearer <key>` or `x-api-key: <key>`, compared in constant time. */
function authenticate(apiKey: string) {
  const carries = carriesKey(apiKey);
  return async (c: Context, next: () => Promise<void>) => {
    const authorization = c.req.header("authorization");
    if (carries(c)) return next();
    const message =
      authorization === undefined && c.req.header("x-api-key") === undefined
        ? "Missing API key: send Authorization: Bearer <key> or x-api-key"
        : "Invalid API key";
    return errorResponse(c, new ProxyHttpError(401, ProxyErrorKind.AUTHENTICATION, message));
  };
}

/** `callConfidence` as given, once it is a probability the backend can be asked about. */
function checkedCallConfidence(threshold: number | undefined, backend: ProxyBackend): number | undefined {
  if (threshold === undefined) return undefined;
  if (!(threshold > 0 && threshold <= 1)) {
    throw new ProxyConfigError(
      `callConfidence must be a probability above 0 and at most 1 (0.5: take a rescued call when the model was at least even odds to call); got ${threshold}.`,
    );
  }
  if (!hasFirstTokens(backend.client({ model: undefined, extraBody: {} }))) {
    throw new ProxyConfigError(
      `callConfidence needs an OpenAI-compatible backend whose answers carry logprobs (llama-server, vLLM); the ${backend.format} backend at ${backend.url} cannot be asked for them. Leave callConfidence unset for this backend.`,
    );
  }
  return threshold;
}
