/**
 * `startOtlpExport`: an OTLP/HTTP (protobuf, which Phoenix requires) exporter of spans (batched) and metrics (periodic) with the
 * OpenTelemetry SDK, for `forge proxy --otel-endpoint` and `forge worker --otel-endpoint`. The SDK
 * packages are optional peers, loaded only here.
 */
import type { Meter, Tracer } from "@opentelemetry/api";
import { importPeers, type OptionalPeer, OptionalPeerMissingError } from "../core/optional-peer.ts";

/** Options of `startOtlpExport`. */
export interface OtlpExportOptions {
  /**
   * The OTLP/HTTP base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`'s meaning): spans go to
   * `<endpoint>/v1/traces`, metrics to `<endpoint>/v1/metrics`.
   */
  endpoint: string;
  /** `service.name` of the resource (default `forge-guardrails`). */
  serviceName?: string;
  /** Export metrics too (default true; `OTEL_METRICS_EXPORTER=none` turns them off in the CLI). */
  metrics?: boolean;
  /** Milliseconds between metric exports (default 60 000). */
  metricIntervalMs?: number;
}

/** A running export: the tracer and meter to give `otelObserver`, and its shutdown. */
export interface OtlpExport {
  readonly tracer: Tracer;
  readonly meter: Meter;
  /** Send what is buffered. */
  flush(): Promise<void>;
  /** Send what is buffered and stop. */
  shutdown(): Promise<void>;
}

/** The OpenTelemetry packages `startOtlpExport` loads (optional peers). */
const OTEL_SDK_PEERS: readonly OptionalPeer[] = [
  { name: "@opentelemetry/api", major: 1 },
  { name: "@opentelemetry/resources", major: 2 },
  { name: "@opentelemetry/sdk-trace-base", major: 2 },
  { name: "@opentelemetry/sdk-metrics", major: 2 },
  { name: "@opentelemetry/exporter-trace-otlp-proto", major: 0 },
  { name: "@opentelemetry/exporter-metrics-otlp-proto", major: 0 },
];

/** Thrown when the OpenTelemetry SDK packages the export needs are not installed. */
export class OtelSdkMissingError extends OptionalPeerMissingError {
  constructor(missing: readonly string[], options?: ErrorOptions) {
    super(OTEL_SDK_PEERS, missing, "startOtlpExport (forge-guardrails/otel) exports with them", options);
  }
}

const peer = (name: string) => OTEL_SDK_PEERS.find((known) => known.name === name) as OptionalPeer;
const missingSdk = (names: string[], cause: unknown) => new OtelSdkMissingError(names, { cause });

/**
 * Start exporting to an OTLP/HTTP endpoint (Phoenix, Jaeger, an OpenTelemetry Collector…).
 * @example
 * const otlp = await startOtlpExport({ endpoint: "http://127.0.0.1:6006" });
 * const observer = otelObserver({ tracer: otlp.tracer, meter: otlp.meter });
 */
export async function startOtlpExport(options: OtlpExportOptions): Promise<OtlpExport> {
  const base = options.endpoint.replace(/\/+$/, "");
  const [
    { resourceFromAttributes },
    { BasicTracerProvider, BatchSpanProcessor },
    { OTLPTraceExporter },
    metrics,
  ] = await importPeers(
    [
      { ...peer("@opentelemetry/resources"), load: () => import("@opentelemetry/resources") },
      { ...peer("@opentelemetry/sdk-trace-base"), load: () => import("@opentelemetry/sdk-trace-base") },
      {
        ...peer("@opentelemetry/exporter-trace-otlp-proto"),
        load: () => import("@opentelemetry/exporter-trace-otlp-proto"),
      },
      { ...peer("@opentelemetry/sdk-metrics"), load: () => import("@opentelemetry/sdk-metrics") },
    ],
    missingSdk,
  );
  const { MeterProvider, PeriodicExportingMetricReader } = metrics;
  const resource = resourceFromAttributes({ "service.name": options.serviceName ?? "forge-guardrails" });
  const traces = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${base}/v1/traces` }))],
  });
  const readers = [];
  if (options.metrics ?? true) {
    const [{ OTLPMetricExporter }] = await importPeers(
      [
        {
          ...peer("@opentelemetry/exporter-metrics-otlp-proto"),
          load: () => import("@opentelemetry/exporter-metrics-otlp-proto"),
        },
      ],
      missingSdk,
    );
    readers.push(
      new PeriodicExportingMetricReader({
        exporter: new OTLPMetricExporter({ url: `${base}/v1/metrics` }),
        exportIntervalMillis: options.metricIntervalMs ?? 60_000,
      }),
    );
  }
  const meters = new MeterProvider({ resource, readers });
  return {
    tracer: traces.getTracer("forge-guardrails"),
    meter: meters.getMeter("forge-guardrails"),
    flush: async () => {
      await Promise.all([traces.forceFlush(), meters.forceFlush()]);
    },
    shutdown: async () => {
      await Promise.all([traces.shutdown(), meters.shutdown()]);
    },
  };
}
