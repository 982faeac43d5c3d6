/**
 * The proxy's Prometheus metrics (`GET /forge/metrics`), with prom-client: requests by route and
 * status, total and backend latency histograms, the guardrails' retries, rescues, nudges,
 * compactions, call-loop actions, denied calls, degenerate generations, calls read from unclosed
 * reasoning and narrowed tool sets, and the requests in
 * flight. One registry per proxy, so two proxies in one process
 * (tests, embedding) count apart.
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { type RequestStats, retriesOf } from "./request-stats.ts";

/** Latency buckets in seconds: from a forwarded model list to a long local generation. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/** Route labels: the proxy's own paths; anything else is `other`, so stray paths cannot grow the series. */
const ROUTES: ReadonlySet<string> = new Set([
  "/v1/chat/completions",
  "/chat/completions",
  "/v1/messages",
  "/v1/responses",
  "/responses",
  "/v1/messages/count_tokens",
  "/messages/count_tokens",
  "/v1/models",
  "/models",
  "/props",
  "/health",
  "/forge/health",
  "/forge/metrics",
]);

/** The route label of a request path. */
export function routeLabel(path: string): string {
  return ROUTES.has(path) ? path : "other";
}

/** The metrics of one proxy. */
export class ProxyMetrics {
  readonly #registry = new Registry();
  readonly #requests: Counter<"route" | "status">;
  readonly #duration: Histogram<"route">;
  readonly #backendDuration: Histogram<"route">;
  readonly #retries: Counter<"route">;
  readonly #rescues: Counter<"route">;
  readonly #proseAnswers: Counter<"route">;
  readonly #renamedTools: Counter<"route">;
  readonly #followUpCalls: Counter<"route">;
  readonly #declinedCalls: Counter<"route">;
  readonly #ungroundedCalls: Counter<"route">;
  readonly #nudges: Counter<"route">;
  readonly #compactions: Counter<"route">;
  readonly #gaveUp: Counter<"route">;
  readonly #loopGuard: Counter<"route" | "action">;
  readonly #denied: Counter<"route">;
  readonly #degenerate: Counter<"route">;
  readonly #thinkCalls: Counter<"route">;
  readonly #narrowed: Counter<"route">;
  readonly #toolsLeftOut: Counter<"route">;
  readonly #inFlight: Gauge;
  readonly #collections: Counter;

  constructor() {
    const registers = [this.#registry];
    this.#requests = new Counter({
      name: "forge_proxy_requests_total",
      help: "Requests answered, by route and HTTP status",
      labelNames: ["route", "status"],
      registers,
    });
    this.#duration = new Histogram({
      name: "forge_proxy_request_duration_seconds",
      help: "Time from a request's arrival to the end of its answer",
      labelNames: ["route"],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.#backendDuration = new Histogram({
      name: "forge_proxy_backend_duration_seconds",
      help: "Time a request spent waiting for the backend, all its calls together (requests that reached it)",
      labelNames: ["route"],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    const counter = (name: string, help: string) =>
      new Counter({ name, help, labelNames: ["route"], registers });
    this.#retries = counter(
      "forge_proxy_retries_total",
      "Backend calls past a request's first (nudged retries)",
    );
    this.#rescues = counter("forge_proxy_rescues_total", "Answers whose tool calls were rescued from text");
    this.#nudges = counter(
      "forge_proxy_nudges_total",
      "Messages added to steer the model (nudges, unknown-tool errors)",
    );
    this.#compactions = counter("forge_proxy_compactions_total", "Histories compacted before a backend call");
    this.#proseAnswers = counter(
      "forge_proxy_prose_answers_total",
      "Text answers taken as they stood under tool_choice auto (the prose policy: no sign of a call, no nudge)",
    );
    this.#followUpCalls = counter(
      "forge_proxy_follow_up_calls_total",
      "Calls the parallel follow-up added to answers (the model continued after its first call)",
    );
    this.#declinedCalls = counter(
      "forge_proxy_declined_calls_total",
      "Rescued calls declined and answered in text: the model was unlikely to call (the call-confidence gate) or invented every argument",
    );
    this.#ungroundedCalls = counter(
      "forge_proxy_ungrounded_calls_total",
      "Rescued calls declined because none of their argument values appears in the conversation (grounded calls)",
    );
    this.#renamedTools = counter(
      "forge_proxy_renamed_tools_total",
      "Calls whose tool name was a near miss of an offered tool (case, separators, a namespace prefix)",
    );
    this.#gaveUp = counter(
      "forge_proxy_gave_up_total",
      "Answers that are the model's prose after the last nudge (the guardrail gave up)",
    );
    this.#loopGuard = new Counter({
      name: "forge_proxy_loop_guard_total",
      help: "Requests the call-loop guard acted on, by action (note, narrow, stop)",
      labelNames: ["route", "action"],
      registers,
    });
    this.#denied = counter("forge_proxy_denied_calls_total", "Tool calls the permission policy denied");
    this.#degenerate = counter(
      "forge_proxy_degenerate_total",
      "Generations cut off because their text looped (degenerate repetition)",
    );
    this.#thinkCalls = counter(
      "forge_proxy_think_calls_total",
      "Answers whose tool calls were read from the end of unclosed reasoning (--think-calls)",
    );
    this.#narrowed = counter(
      "forge_proxy_narrowed_total",
      "Requests sent with fewer tools than they offered (tool-set narrowing, --narrow-tools)",
    );
    this.#toolsLeftOut = counter(
      "forge_proxy_tools_left_out_total",
      "Tools left out of requests by tool-set narrowing",
    );
    this.#inFlight = new Gauge({
      name: "forge_proxy_requests_in_flight",
      help: "Requests being served (streamed answers until their end)",
      registers,
    });
    this.#collections = new Counter({
      name: "forge_proxy_garbage_collections_total",
      help: "Full garbage collections asked for after large request bodies (--reclaim-after)",
      registers,
    });
  }

  /** The proxy asked V8 for a full collection (see `BodyReclaimer`). */
  collectionRequested(): void {
    this.#collections.inc();
  }

  /** A request arrived. */
  started(): void {
    this.#inFlight.inc();
  }

  /** A request's answer has been sent: count it with what it cost. */
  finished(route: string, status: number, durationMs: number, stats: RequestStats): void {
    this.#inFlight.dec();
    this.#requests.inc({ route, status: String(status) });
    this.#duration.observe({ route }, durationMs / 1000);
    if (stats.backendCalls > 0) this.#backendDuration.observe({ route }, stats.backendMs / 1000);
    const retries = retriesOf(stats);
    if (retries > 0) this.#retries.inc({ route }, retries);
    if (stats.rescues > 0) this.#rescues.inc({ route }, stats.rescues);
    if (stats.nudges > 0) this.#nudges.inc({ route }, stats.nudges);
    if (stats.compactions > 0) this.#compactions.inc({ route }, stats.compactions);
    if (stats.gaveUp) this.#gaveUp.inc({ route });
    if (stats.proseAnswers > 0) this.#proseAnswers.inc({ route }, stats.proseAnswers);
    if (stats.renamedTools > 0) this.#renamedTools.inc({ route }, stats.renamedTools);
    if (stats.followUpCalls > 0) this.#followUpCalls.inc({ route }, stats.followUpCalls);
    if (stats.declinedCalls > 0) this.#declinedCalls.inc({ route }, stats.declinedCalls);
    if (stats.ungroundedCalls > 0) this.#ungroundedCalls.inc({ route }, stats.ungroundedCalls);
    if (stats.loopGuard) this.#loopGuard.inc({ route, action: stats.loopGuard });
    if (stats.deniedCalls > 0) this.#denied.inc({ route }, stats.deniedCalls);
    if (stats.degenerate > 0) this.#degenerate.inc({ route }, stats.degenerate);
    if (stats.thinkCalls > 0) this.#thinkCalls.inc({ route }, stats.thinkCalls);
    if (stats.narrowed) {
      this.#narrowed.inc({ route });
      this.#toolsLeftOut.inc({ route }, stats.narrowed.total - stats.narrowed.offered);
    }
  }

  /** The Prometheus text exposition and its content type. */
  async exposition(): Promise<{ body: string; contentType: string }> {
    return { body: await this.#registry.metrics(), contentType: this.#registry.contentType };
  }
}
