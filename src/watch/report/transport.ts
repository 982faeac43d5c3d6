/**
 * Sending run events to a watch server: one HTTP POST per batch, in order, with failures reported
 * (never thrown into the run being watched) and surfaced by `flush()`. `openWatchRun` gives a
 * source without a statechart actor (the proxy) a handle for one run.
 */
import { ForgeError } from "../../core/errors.ts";
import type { Message } from "../../core/messages.ts";
import type {
  TimelineCompaction,
  TimelineExchange,
  WatchEvent,
  WatchOutcome,
  WatchSource,
} from "./events.ts";
import type { StatechartGraph } from "./statechart-graph.ts";

/** Sending a run's events to the watch server failed. */
export class WatchReportError extends ForgeError {
  constructor(
    readonly url: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(
      `Could not send run events to the watch server at ${url}: ${detail}. Start it with \`forge watch\` (or startWatchServer()) and check the URL.`,
      options,
    );
    this.name = "WatchReportError";
  }
}

/** Options of `createWatchTransport`. */
export interface WatchTransportOptions {
  /**
   * The watch server's URL as `forge watch` printed it, e.g. `http://127.0.0.1:4141/?token=…`; its
   * `token` (if any) is sent as `Authorization: Bearer <token>`, never in the URL posted to.
   */
  url: string;
  /** The watch server's token, when `url` does not carry it (`?token=`). */
  token?: string;
  /**
   * Called once per failed send (the server down, a rejected batch). Default: one line on stderr
   * for the first failure. `flush()` rejects with the first failure either way.
   */
  onError?: (error: WatchReportError) => void;
  /** The fetch to send with (default the global one). */
  fetch?: typeof fetch;
}

/** Posts batches of a run's events to a watch server, in the order given. */
export interface WatchTransport {
  readonly url: string;
  post(runId: string, events: WatchEvent[]): void;
  /** Resolves when every batch so far was answered; rejects with the first failed send. */
  flush(): Promise<void>;
}

/** A watch server's base URL (no query, no trailing slash) and the token a URL or option gives. */
export function watchEndpoint(options: Pick<WatchTransportOptions, "url" | "token">): {
  url: string;
  token: string | null;
} {
  if (!URL.canParse(options.url))
    return { url: options.url.replace(/\/+$/, ""), token: options.token ?? null };
  const parsed = new URL(options.url);
  const token = options.token ?? parsed.searchParams.get("token");
  return { url: `${parsed.origin}${parsed.pathname}`.replace(/\/+$/, ""), token };
}

/** A transport to the watch server at `options.url`. */
export function createWatchTransport(options: WatchTransportOptions): WatchTransport {
  const { url, token } = watchEndpoint(options);
  const send = options.fetch ?? fetch;
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  let chain: Promise<void> = Promise.resolve();
  let firstError: WatchReportError | null = null;
  let reported = false;
  const fail = (error: WatchReportError) => {
    firstError ??= error;
    if (options.onError) options.onError(error);
    else if (!reported) {
      reported = true;
      process.stderr.write(`forge watch: ${error.message}\n`);
    }
  };
  return {
    url,
    post(runId, events) {
      chain = chain.then(async () => {
        try {
          // Bounded: a watch server that hangs must not hold every later report (and its history).
          const response = await send(`${url}/api/runs/${runId}/events`, {
            method: "POST",
            headers,
            body: JSON.stringify({ events }),
            signal: AbortSignal.timeout(POST_TIMEOUT_MS),
          });
          if (!response.ok)
            fail(new WatchReportError(url, `HTTP ${response.status} ${await response.text()}`));
        } catch (error) {
          fail(new WatchReportError(url, (error as Error).message, { cause: error }));
        }
      });
    },
    async flush() {
      await chain;
      if (firstError !== null) throw firstError;
    },
  };
}

/** How long one report may take before it counts as failed. */
const POST_TIMEOUT_MS = 10_000;

/** A fresh run id: the name's slug, the UTC time to the second, and a random suffix. */
export function createRunId(name: string): string {
  const prefix = name.replace(/[^A-Za-z0-9_-]+/g, "-").slice(0, 40) || "run";
  const stamp = new Date()
    .toISOString()
    .replace(/[-:.TZ]/g, "")
    .slice(0, 14);
  return `${prefix}-${stamp}-${Math.random().toString(36).slice(2, 8)}`;
}

/** One run being reported; every method stamps its event with the time since the run opened. */
export interface WatchRun {
  readonly runId: string;
  state(state: string, iteration: number): void;
  message(message: Message): void;
  /** Several messages at once, in one POST (a request's history). */
  messages(messages: readonly Message[]): void;
  /** An LLM call that started at `startedAt` (`performance.now()`). */
  exchange(startedAt: number, exchange: Omit<TimelineExchange, "at">): void;
  compaction(compaction: Omit<TimelineCompaction, "at">): void;
  finish(outcome: WatchOutcome, detail?: { result?: unknown; error?: unknown }): void;
}

/** The name, error and class of a thrown value, as a watch event carries it. */
export function describeThrown(error: unknown): {
  name: string;
  message: string;
  statusCode?: number;
  body?: string;
} {
  if (!(error instanceof Error)) return { name: "Error", message: String(error) };
  // A backend error's status and body, so a replay can throw the same error again.
  const { statusCode, body } = error as { statusCode?: unknown; body?: unknown };
  return {
    name: error.name,
    message: error.message,
    ...(typeof statusCode === "number" && { statusCode }),
    ...(typeof body === "string" && { body }),
  };
}

/**
 * Open a run on a transport and announce it.
 * @example
 * const run = openWatchRun(createWatchTransport({ url }), { name: "POST /v1/chat/completions", source: "proxy" });
 * run.message(userMessage);
 * run.finish("done", { result: answer });
 */
export function openWatchRun(
  transport: WatchTransport,
  options: { name: string; source: WatchSource; statechart?: StatechartGraph | null; runId?: string },
): WatchRun {
  const runId = options.runId ?? createRunId(options.name);
  const openedAt = performance.now();
  const since = () => Math.round(performance.now() - openedAt);
  const emit = (event: WatchEvent) => transport.post(runId, [event]);
  emit({
    type: "run.started",
    at: 0,
    name: options.name,
    source: options.source,
    startedAt: Date.now(),
    statechart: options.statechart ?? null,
  });
  return {
    runId,
    state: (state, iteration) => emit({ type: "state.entered", at: since(), state, iteration }),
    message: (message) => emit({ type: "message.appended", at: since(), message }),
    messages: (messages) => {
      const at = since();
      if (messages.length > 0) {
        transport.post(
          runId,
          messages.map((message) => ({ type: "message.appended", at, message })),
        );
      }
    },
    exchange: (startedAt, exchange) =>
      emit({ type: "llm.called", at: Math.max(0, Math.round(startedAt - openedAt)), ...exchange }),
    compaction: (compaction) => emit({ type: "context.compacted", at: since(), ...compaction }),
    finish: (outcome, detail = {}) =>
      emit({
        type: "run.finished",
        at: since(),
        outcome,
        ...(detail.result !== undefined && { result: detail.result }),
        error: detail.error === undefined ? null : describeThrown(detail.error),
      }),
  };
}
