/**
 * One access log line per request and the request metrics, written when the answer has been sent
 * (a streamed answer at its end). Hono's `logger` middleware prints method, path, status and time
 * only; this line also carries the request id, the model and what the guardrails did (retries,
 * rescues, nudges, compactions, whether they gave up, images omitted), which the chat service
 * records in the request's `RequestStats`.
 */
import type { ServerResponse } from "node:http";
import type { MiddlewareHandler } from "hono";
import { type ProxyMetrics, routeLabel } from "./metrics.ts";
import { attachRequestStats, createRequestStats, type RequestStats, retriesOf } from "./request-stats.ts";

/** How access log lines are written: `text` (`key=value` pairs) or `json` (one object per line). */
export type AccessLogFormat = "text" | "json";

/** Where and how the access log goes. */
export interface AccessLogOptions {
  format: AccessLogFormat;
  /** Receives each line, without its newline. */
  write: (line: string) => void;
}

/** One request, as logged. */
export interface AccessRecord {
  time: string;
  requestId: string;
  method: string;
  path: string;
  status: number;
  durationMs: number;
  model: string | undefined;
  backendMs: number;
  retries: number;
  rescues: number;
  nudges: number;
  compactions: number;
  /** `gave_up` when the model kept answering prose after the nudges and that prose was the answer. */
  guardrail: "gave_up" | undefined;
  /** Image parts replaced by a text placeholder. */
  imagesOmitted: number;
  /** The answer was the model's text as it stood (the prose policy). */
  proseAnswers: number;
  /** Calls whose tool name was a near miss of an offered tool. */
  renamedTools: number;
  /** Calls the parallel follow-up added. */
  followUpCalls: number;
  /** Rescued calls declined and answered in text: by the call-confidence gate (ADR 040) or as invented (ADR 041). */
  declined?: number | undefined;
  /** The model's probability of opening its first answer with a call, when the gate asked (ADR 040). */
  callConfidence?: number | undefined;
  /** Of `declined`, calls declined as invented: no argument value was in the conversation (ADR 041). */
  ungrounded?: number | undefined;
  /** What the call-loop guard did: `note`, `narrow` or `stop` (ADR 020). */
  loopGuard?: "note" | "narrow" | "stop" | undefined;
  /** Calls the permission policy denied (ADR 021). */
  denied?: number | undefined;
  /** Generations cut off as degenerate repetition (ADR 022). */
  degenerate?: number | undefined;
  /** Answers whose calls were read from unclosed reasoning (ADR 027). */
  thinkCalls?: number | undefined;
  /** Tools the request had and tools sent, when narrowing left some out (ADR 028). */
  narrowed?: { total: number; offered: number } | undefined;
}

/**
 * The line of one record.
 * @example
 * formatAccessLine(record, "text");
 * // time=2026-01-01T00:00:00.000Z id=5f0c… method=POST path=/v1/chat/completions status=200 ms=812.4 model="qwen3:8b" backend_ms=809.9 retries=1 rescues=0 nudges=1 compactions=0 guardrail=- images_omitted=0 loop_guard=- denied=0 degenerate=0 think_calls=0 narrowed=-
 */
export function formatAccessLine(record: AccessRecord, format: AccessLogFormat): string {
  const fields: [string, string | number | null][] = [
    ["time", record.time],
    ["id", record.requestId],
    ["method", record.method],
    ["path", record.path],
    ["status", record.status],
    ["ms", round(record.durationMs)],
    ["model", record.model ?? null],
    ["backend_ms", round(record.backendMs)],
    ["retries", record.retries],
    ["rescues", record.rescues],
    ["nudges", record.nudges],
    ["compactions", record.compactions],
    ["guardrail", record.guardrail ?? null],
    ["images_omitted", record.imagesOmitted],
    ["prose", record.proseAnswers],
    ["renamed", record.renamedTools],
    ["follow_up", record.followUpCalls],
    ["declined", record.declined ?? 0],
    ["ungrounded", record.ungrounded ?? 0],
    [
      "confidence",
      record.callConfidence === undefined ? null : Math.round(record.callConfidence * 1000) / 1000,
    ],
    ["loop_guard", record.loopGuard ?? null],
    ["denied", record.denied ?? 0],
    ["degenerate", record.degenerate ?? 0],
    ["think_calls", record.thinkCalls ?? 0],
    ["narrowed", record.narrowed ? `${record.narrowed.total}>${record.narrowed.offered}` : null],
  ];
  if (format === "json") return JSON.stringify(Object.fromEntries(fields));
  // Client-given text (path, model) is quoted when it could break the line or the pairs.
  return fields
    .map(
      ([key, value]) =>
        `${key}=${typeof value === "string" && /[\s"=\\]|^$/.test(value) ? JSON.stringify(value) : String(value ?? "-")}`,
    )
    .join(" ");
}

/**
 * Middleware: attach a fresh `RequestStats` to the request, and when its answer has been sent
 * count it in `metrics` and write its access line (when `log` is set). Runs after Hono's
 * `requestId`, whose id it logs and sets on the response.
 */
export function observeRequests(metrics: ProxyMetrics, log: AccessLogOptions | undefined): MiddlewareHandler {
  return async (c, next) => {
    const started = performance.now();
    const stats = createRequestStats();
    stats.requestId = idOf(c);
    stats.traceparent = c.req.header("traceparent");
    attachRequestStats(c, stats);
    metrics.started();
    // Under node-server the answer ends when its response closes (a stream at its last byte).
    const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
    let closed = outgoing === undefined;
    let handled = false;
    const finish = () => {
      const status = c.res.status;
      const durationMs = performance.now() - started;
      metrics.finished(routeLabel(c.req.path), status, durationMs, stats);
      if (log)
        log.write(
          formatAccessLine(
            recordOf(c.req.method, c.req.path, status, durationMs, idOf(c), stats),
            log.format,
          ),
        );
    };
    outgoing?.once("close", () => {
      closed = true;
      if (handled) finish();
    });
    try {
      await next();
    } finally {
      // Set again after the handler: a raw `Response` it returned does not carry earlier headers.
      c.header("x-request-id", idOf(c));
      handled = true;
      if (closed) finish();
    }
  };
}

function idOf(c: Parameters<MiddlewareHandler>[0]): string {
  return (c.get("requestId" as never) as string | undefined) ?? "-";
}

function recordOf(
  method: string,
  path: string,
  status: number,
  durationMs: number,
  requestId: string,
  stats: RequestStats,
): AccessRecord {
  return {
    time: new Date().toISOString(),
    requestId,
    method,
    path,
    status,
    durationMs,
    model: stats.model,
    backendMs: stats.backendMs,
    retries: retriesOf(stats),
    rescues: stats.rescues,
    nudges: stats.nudges,
    compactions: stats.compactions,
    guardrail: stats.gaveUp ? "gave_up" : undefined,
    imagesOmitted: stats.omittedImages,
    proseAnswers: stats.proseAnswers,
    renamedTools: stats.renamedTools,
    followUpCalls: stats.followUpCalls,
    declined: stats.declinedCalls,
    callConfidence: stats.callConfidence,
    ungrounded: stats.ungroundedCalls,
    loopGuard: stats.loopGuard,
    denied: stats.deniedCalls,
    degenerate: stats.degenerate,
    thinkCalls: stats.thinkCalls,
    narrowed: stats.narrowed,
  };
}

function round(milliseconds: number): number {
  return Math.round(milliseconds * 10) / 10;
}
