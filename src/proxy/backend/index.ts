/** The proxy's backends: the model server behind it (external or managed), how guarded calls reach it and how other requests pass through. */
export type { BackendCall, BackendFormat, BackendHealth, ForwardRequest, ProxyBackend } from "./backend.ts";
export type { ProxyToolMode } from "./forwarding-client.ts";
export {
  type BackendClientConfig,
  type BackendClientFactory,
  createHttpBackend,
  type HttpBackendOptions,
} from "./http-backend.ts";
export { type ManagedBackendOptions, startManagedBackend } from "./managed-backend.ts";
export { forwardToBackend } from "./passthrough.ts";
