/** The guardrail proxy: OpenAI- and Anthropic-compatible endpoints in front of a local model server. */

export { narrowTools, rankTools, toolNarrowingRulesSchema } from "../guardrails/tool-narrowing.ts";
export type { AccessLogFormat, AccessLogOptions } from "./access-log.ts";
export {
  createProxy,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_BODY_MEMORY_BYTES,
  type ProxyOptions,
} from "./app.ts";
export type {
  BackendCall,
  BackendFormat,
  BackendHealth,
  ForwardRequest,
  ProxyBackend,
  ProxyToolMode,
} from "./backend/index.ts";
export {
  type BackendClientConfig,
  type BackendClientFactory,
  createHttpBackend,
  type HttpBackendOptions,
  type ManagedBackendOptions,
  startManagedBackend,
} from "./backend/index.ts";
export { PROXY_DEFAULTS } from "./defaults.ts";
export {
  errorBody,
  type ProxyApi,
  ProxyConfigError,
  ProxyErrorKind,
  ProxyHttpError,
  toProxyHttpError,
} from "./errors.ts";
export {
  BodyReclaimer,
  DEFAULT_RECLAIM_AFTER_BYTES,
  ProxyDrain,
  SHUTDOWN_RETRY_AFTER_SECONDS,
} from "./http/index.ts";
export type { ObservedProxyRequest, ObserveProxyRequest } from "./observed-requests.ts";
export { PERMISSION_PRESETS } from "./permission-presets.ts";
export { type RunningProxy, type StartProxyOptions, startProxy } from "./server.ts";
