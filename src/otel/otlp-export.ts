/**
 * `startOtlpExport`: an OTLP/HTTP (protobuf, which Phoenix requires) exporter of spans (batched) and metrics (periodic) with the
 * OpenTelemetry SDK, for `forge proxy --otel-endpoint` and `forge worker --otel-endpoint`. The SDK
 * packages are optional peers, loaded only here.
 */
import type { Meter, Tracer } from "@opentelemetry/api";
import { ForgeError } from "../core/errors.ts";

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

/** Thrown when the OpenTelemetry SDK packages the export needs are not installed. */
export class OtelSdkMissingError extends ForgeError {
  constructor(packageName: string) {
    super(
      `${packageName} is not installed: npm install @opentelemetry/api @opentelemetry/sdk-trace-base @opentelemetry/sdk-metrics @opentelemetry/exporter-trace-otlp-proto @opentelemetry/exporter-metrics-otlp-proto @opentelemetry/resources`,
    );
  }
}

async function load<T>(name: string, importer: () => Promise<T>): Promise<T> {
  try {
    return await importer();
  } catch (error) {
    if ((error as { code?: string }).code === "ERR_MODULE_NOT_FOUND") throw new OtelSdkMissingError(name);
    throw error;
  }
}

/**
 * Start exporting to an OTLP/HTTP endpoint (Phoenix, Jaeger, an OpenTelemetry Collector…).
 * @example
 * const otlp = await startOtlpExport({ endpoint: "http://127.0.0.1:6006" });
 * const observer = otelObserver({ tracer: otlp.tracer, meter: otlp.meter });
 */
export async function startOtlpExport(options: OtlpExportOptions): Promise<OtlpExport> {
  const base = options.endpoint.replace(/\/+$/, "");
  const { resourceFromAttributes } = await load(
    "@opentelemetry/resources",
    () => import("@opentelemetry/resources"),
  );
  const { BasicTracerProvider, BatchSpanProcessor } = await load(
    "@opentelemetry/sdk-trace-base",
    () => import("@opentelemetry/sdk-trace-base"),
  );
  const { OTLPTraceExporter } = await load(
    "@opentelemetry/exporter-trace-otlp-proto",
    () => import("@opentelemetry/exporter-trace-otlp-proto"),
  );
  const resource = resourceFromAttributes({ "service.name": options.serviceName ?? "forge-guardrails" });
  const traces = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${base}/v1/traces` }))],
  });
  const { MeterProvider, PeriodicExportingMetricReader } = await load(
    "@opentelemetry/sdk-metrics",
    () => import("@opentelemetry/sdk-metrics"),
  );
  const readers = [];
  if (options.metrics ?? true) {
    const { OTLPMetricExporter } = await load(
      "@opentelemetry/exporter-metrics-otlp-proto",
      () => import("@opentelemetry/exporter-metrics-otlp-proto"),
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
