/** `EndpointPool`: one `LLMClient` over several backends, with health checks, failover and a slot per endpoint. */
export {
  type EndpointConfig,
  EndpointPool,
  EndpointPoolClosedError,
  EndpointPoolConfigError,
  type EndpointPoolOptions,
  type EndpointStatus,
  EndpointsUnavailableError,
  type PoolEndpointKind,
  type PoolEndpointOptions,
} from "./pool.ts";
