/**
 * `otelObserver`: a `RunObserver` (docs/decisions/015) that writes each run as OpenTelemetry
 * spans and metrics under the GenAI semantic conventions (docs/decisions/032-opentelemetry.md).
 */
import { type Context, type Meter, metrics, ROOT_CONTEXT, type Tracer, trace } from "@opentelemetry/api";
import type { RunObserver } from "../core/run-observer.ts";
import { formatTraceparent, parseTraceparent } from "./guardrail-events.ts";
import { DURATION_BUCKETS, Forge, GenAi, Metric, TOKEN_BUCKETS } from "./names.ts";
import { activeContext, RunTrace, type TraceSettings } from "./run-trace.ts";

/** The context of a remote span named by a W3C traceparent; undefined for none or a malformed one. */
function contextOf(traceparent: string | undefined): Context | undefined {
  const remote = traceparent === undefined ? undefined : parseTraceparent(traceparent);
  return remote === undefined ? undefined : trace.setSpanContext(ROOT_CONTEXT, remote);
}

/** A proxy request's guardrail counts on its span: rescue events not heard yet, and `forge.proxy.*` attributes. */
function recordProxyCounts(run: RunTrace, counts: ProxyGuardrailCounts): void {
  for (let i = run.rescues; i < counts.rescues; i++) run.rescued();
  const { rescues: _rescues, ...rest } = counts;
  for (const [key, value] of Object.entries(rest)) {
    if (value === undefined || value === 0 || value === false) continue;
    run.span.setAttribute(`${Forge.PROXY}.${key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}`, value);
  }
}

/** Options of `otelObserver`. */
export interface OtelObserverOptions {
  /** Where spans go; default the global tracer provider's `forge-guardrails` tracer. */
  tracer?: Tracer;
  /** Where metrics go; default the global meter provider's `forge-guardrails` meter. */
  meter?: Meter;
  /**
   * Record message contents, tool arguments and results on the spans (`gen_ai.input.messages`,
   * `gen_ai.tool.call.arguments`, …). Default false: they may hold personal data.
   */
  recordContent?: boolean;
  /** `gen_ai.request.model` of the chat spans (the client does not say which model it serves). */
  model?: string;
  /** `gen_ai.provider.name` (e.g. `llama.cpp`, `ollama`, `openai`). */
  provider?: string;
  /**
   * The W3C `traceparent` a run's span continues, e.g. one stored with a queued run's record
   * (`traceparentOf`) and read back by another process. Default: the parked attempt's span this
   * observer wrote for the same run id, else the active context.
   */
  parentOf?: (runId: string) => string | undefined;
}

/**
 * What the proxy's guardrails did on one request, as its access log counts it: calls rescued from
 * text, prose answers taken as they stood, near-miss names matched, calls the parallel follow-up
 * added, denied calls, degenerate generations cut off, calls read from unclosed reasoning, the
 * call-loop guard's step, whether it gave up on prose.
 */
export interface ProxyGuardrailCounts {
  rescues: number;
  proseAnswers?: number;
  renamedTools?: number;
  followUpCalls?: number;
  /** Rescued calls the call-confidence gate declined, and the probability it measured (ADR 040). */
  declinedCalls?: number;
  callConfidence?: number | undefined;
  /** Of `declinedCalls`, the invented ones (ADR 041). */
  ungroundedCalls?: number;
  deniedCalls?: number;
  degenerate?: number;
  thinkCalls?: number;
  loopGuard?: "note" | "narrow" | "stop" | undefined;
  gaveUp?: boolean;
}

/** A guarded request's spans (a proxy request): its observer, and the end of its span. */
export interface ObservedRequest {
  readonly observer: RunObserver;
  /**
   * End the request's span: `error` null when it was answered. `counts`, the proxy's guardrail
   * counts of the request: a `forge.rescue` event per rescued call (the proxy returns them to its
   * client rather than appending them to a history its observer hears) and `forge.proxy.*`
   * attributes for the rest.
   */
  end(error: unknown, counts?: ProxyGuardrailCounts): void;
}

/** What a proxy request is, for its span. */
export interface RequestInfo {
  requestId: string;
  /** The model the client asked for. */
  model: string | undefined;
  /** The client's W3C `traceparent` header: the request's span continues the client's trace (a malformed one is ignored, as W3C Trace Context says). */
  traceparent?: string | undefined;
}

/** The OpenTelemetry observer: give it to a runner's (or a run's) `observers`. */
export interface OtelObserver extends RunObserver {
  /** Spans of one guarded request that runs no workflow (the proxy's; `ProxyOptions.observeRequest`). */
  observeRequest(request: RequestInfo): ObservedRequest;
  /** The W3C `traceparent` of a run's span, open or parked; undefined for a run it does not know. */
  traceparentOf(runId: string): string | undefined;
  /**
   * Start the run's next span under this W3C `traceparent`: the trace a queued run was enqueued in,
   * or the span of an attempt another process parked. A queue worker's `tracing` calls it.
   * @throws RangeError when it is not a W3C traceparent.
   */
  continueTrace(runId: string, traceparent: string): void;
}

/**
 * An observer writing runs as OpenTelemetry spans and metrics: a run is an `invoke_agent
 * <workflow>` span, each LLM call a `chat <model>` span under it, each tool call an
 * `execute_tool <tool>` span; nudges, rescues, compactions, repeated-call notes and approvals are
 * `forge.*` events on the run's span and counts of `forge.guardrail.events`. A run parked for
 * approval and resumed continues its trace. Needs `@opentelemetry/api` (an optional peer).
 * @example
 * const runner = new WorkflowRunner({ client, contextManager, observers: [otelObserver({ model: "qwen3-8b" })] });
 */
export function otelObserver(options: OtelObserverOptions = {}): OtelObserver {
  const tracer = options.tracer ?? trace.getTracer("forge-guardrails");
  const meter = options.meter ?? metrics.getMeter("forge-guardrails");
  const settings: TraceSettings = {
    tracer,
    recordContent: options.recordContent ?? false,
    model: options.model,
    provider: options.provider,
    tokenUsage: meter.createHistogram(Metric.TOKEN_USAGE, {
      description: "Number of input and output tokens used",
      unit: "{token}",
      advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
    }),
    operationDuration: meter.createHistogram(Metric.OPERATION_DURATION, {
      description: "GenAI operation duration",
      unit: "s",
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    }),
    guardrailEvents: meter.createCounter(Metric.GUARDRAIL_EVENTS, {
      description: "Guardrail interventions: nudges, rescues, compactions, repeated-call notes, approvals",
    }),
  };
  const runs = new Map<string, RunTrace>();
  // Runs opened by onRunStart: their onRunEnd, not their final state, ends their span.
  const started = new Set<string>();
  // Parked runs' spans, so the resumed attempt continues the trace; dropped when it resumes.
  const parked = new Map<string, Context>();

  // Traceparents given by continueTrace, used by the run's next span.
  const continued = new Map<string, string>();

  const parentFor = (runId: string): Context => {
    const given = continued.get(runId);
    continued.delete(runId);
    return contextOf(given ?? options.parentOf?.(runId)) ?? parked.get(runId) ?? activeContext();
  };
  // A run seen without `onRunStart` (an actor of `machineFor`) gets its span at its first event.
  const runOf = (runId: string): RunTrace => {
    let run = runs.get(runId);
    if (run === undefined || run.ended) {
      run = new RunTrace(settings, {
        runId,
        agent: "workflow",
        resumed: false,
        parent: parentFor(runId),
      });
      runs.set(runId, run);
    }
    return run;
  };
  const endRun = (runId: string, status: Parameters<RunTrace["end"]>[0], error: unknown) => {
    const run = runs.get(runId);
    if (run === undefined) return;
    runs.delete(runId);
    started.delete(runId);
    if (status === "awaiting_approval") parked.set(runId, trace.setSpan(ROOT_CONTEXT, run.span));
    run.end(status, error);
  };

  return {
    onRunStart({ runId, workflow, resumed, decisions }) {
      const parent = parentFor(runId);
      parked.delete(runId);
      const run = new RunTrace(settings, { runId, agent: workflow ?? "workflow", resumed, parent });
      runs.set(runId, run);
      started.add(runId);
      if (decisions !== undefined) run.decided(decisions);
    },
    onRunEnd({ runId, status, error }) {
      endRun(runId, status, error);
    },
    onState({ runId, state, iteration }) {
      if (state === "awaitingApproval") runOf(runId).parked(iteration);
      // An actor of machineFor has no onRunEnd: its final state ends its span.
      else if (state === "done" || state === "failed" || state === "cancelled" || state === "responded") {
        if (!started.has(runId)) endRun(runId, state, null);
      }
    },
    onMessage(message, position) {
      if (position !== undefined) runOf(position.runId).message(message, position.iteration);
    },
    onLLMCallStart: (event) => runOf(event.runId).llmStart(event),
    onLLMCallEnd: (event) => runOf(event.runId).llmEnd(event),
    onToolCall: (event) => runOf(event.runId).toolCall(event),
    onToolResult: (event) => runOf(event.runId).toolResult(event),
    onCompaction: (event) => runOf(event.runId).compaction(event),
    observeRequest(request) {
      const run = new RunTrace(settings, {
        runId: request.requestId,
        agent: "proxy",
        resumed: false,
        parent: contextOf(request.traceparent) ?? activeContext(),
        model: request.model,
        attributes: {
          [Forge.REQUEST_ID]: request.requestId,
          ...(request.model !== undefined && { [GenAi.REQUEST_MODEL]: request.model }),
        },
      });
      return {
        observer: {
          onMessage: (message, position) => run.message(message, position?.iteration),
          onLLMCallStart: (event) => run.llmStart(event),
          onLLMCallEnd: (event) => run.llmEnd(event),
          onCompaction: (event) => run.compaction(event),
        },
        end: (error, counts) => {
          if (counts !== undefined) recordProxyCounts(run, counts);
          run.end(error === null ? "responded" : "failed", error);
        },
      };
    },
    continueTrace(runId, traceparent) {
      if (parseTraceparent(traceparent) === undefined) {
        throw new RangeError(
          `otelObserver: continueTrace needs a W3C traceparent such as 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01, got ${JSON.stringify(traceparent)}`,
        );
      }
      continued.set(runId, traceparent);
    },
    traceparentOf(runId) {
      const open = runs.get(runId)?.span;
      const context = open ? open.spanContext() : trace.getSpanContext(parked.get(runId) ?? ROOT_CONTEXT);
      return context === undefined ? undefined : formatTraceparent(context);
    },
  };
}
