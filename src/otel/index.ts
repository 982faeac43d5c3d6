/** OpenTelemetry traces and metrics of guarded runs (`forge-guardrails/otel`), under the GenAI semantic conventions. */
export { formatTraceparent, parseTraceparent } from "./guardrail-events.ts";
export {
  Forge as ForgeAttributes,
  ForgeEvent,
  GenAi as GenAiAttributes,
  Metric as OtelMetric,
} from "./names.ts";
export {
  type ObservedRequest,
  type OtelObserver,
  type OtelObserverOptions,
  otelObserver,
  type ProxyGuardrailCounts,
  type RequestInfo,
} from "./observer.ts";
export {
  OtelSdkMissingError,
  type OtlpExport,
  type OtlpExportOptions,
  startOtlpExport,
} from "./otlp-export.ts";
