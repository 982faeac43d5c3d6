/**
 * `--otel-endpoint <url>` (env `OTEL_EXPORTER_OTLP_ENDPOINT`) and `--otel-record-content`, shared
 * by `forge proxy` and `forge worker`: spans (batched) and metrics over OTLP/HTTP, written by the
 * OpenTelemetry observer (docs/guides/tracing-with-opentelemetry.md).
 */
import { Option } from "commander";
import type { OtelObserver, OtlpExport } from "../otel/index.ts";

/** `--otel-endpoint <url>`, read from `OTEL_EXPORTER_OTLP_ENDPOINT` when not given. */
export function otelEndpointOption(): Option {
  return new Option(
    "--otel-endpoint <url>",
    "send OpenTelemetry traces and metrics (GenAI conventions) to this OTLP/HTTP base URL, e.g. Phoenix's http://127.0.0.1:6006",
  ).env("OTEL_EXPORTER_OTLP_ENDPOINT");
}

/** A running OpenTelemetry export and the observer writing to it. */
export interface CliTelemetry {
  readonly observer: OtelObserver;
  readonly export: OtlpExport;
}

/**
 * Start exporting to `endpoint` (undefined: no telemetry). `OTEL_SERVICE_NAME` names the service
 * (default `forge-<command>`); `OTEL_METRICS_EXPORTER=none` leaves metrics out (Phoenix takes only traces).
 */
export async function startCliTelemetry(options: {
  endpoint: string | undefined;
  recordContent: boolean;
  command: string;
  model?: string | undefined;
}): Promise<CliTelemetry | undefined> {
  if (options.endpoint === undefined) return undefined;
  const { otelObserver, startOtlpExport } = await import("../otel/index.ts");
  const exported = await startOtlpExport({
    endpoint: options.endpoint,
    serviceName: process.env.OTEL_SERVICE_NAME ?? `forge-${options.command}`,
    metrics: process.env.OTEL_METRICS_EXPORTER !== "none",
  });
  const observer = otelObserver({
    tracer: exported.tracer,
    meter: exported.meter,
    recordContent: options.recordContent,
    ...(options.model !== undefined && { model: options.model }),
  });
  return { observer, export: exported };
}
