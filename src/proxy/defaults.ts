/**
 * The proxy's defaults in one object, for the front ends that state them again as option defaults
 * (`forge proxy`, `forge launch`): each value is the constant the proxy itself falls back on, so a
 * flag's default cannot drift from the library's.
 */
import { DEFAULT_RETRY_BOUNDS } from "../guardrails/bounded-retry.ts";
import { DEFAULT_CALL_LOOP_RULES } from "../guardrails/call-loop.ts";
import { DEFAULT_LIMITS } from "../guardrails/limits.ts";
import {
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_BODY_MEMORY_BYTES,
  DEFAULT_MAX_IN_FLIGHT,
  DEFAULT_MAX_QUEUE,
} from "./app.ts";
import { DEFAULT_BACKEND_TIMEOUT_MS } from "./backend/http-backend.ts";
import { DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_RESPONSE_BYTES } from "./backend/transport.ts";
import { DEFAULT_MAX_JSON_DEPTH } from "./http/read-body.ts";
import { DEFAULT_RECLAIM_AFTER_BYTES } from "./http/reclaim.ts";
import { DEFAULT_DRAIN_TIMEOUT_MS, DEFAULT_PROXY_HOST, DEFAULT_PROXY_PORT } from "./server.ts";

/** What `startProxy` / `createProxy` / `createHttpBackend` use when an option is left out. */
export const PROXY_DEFAULTS = Object.freeze({
  host: DEFAULT_PROXY_HOST,
  port: DEFAULT_PROXY_PORT,
  maxRetries: DEFAULT_LIMITS.maxRetriesPerStep,
  maxBodyBytes: DEFAULT_MAX_BODY_BYTES,
  timeoutMs: DEFAULT_BACKEND_TIMEOUT_MS,
  idleTimeoutMs: DEFAULT_IDLE_TIMEOUT_MS,
  maxResponseBytes: DEFAULT_MAX_RESPONSE_BYTES,
  maxInFlight: DEFAULT_MAX_IN_FLIGHT,
  maxQueue: DEFAULT_MAX_QUEUE,
  maxBodyMemoryBytes: DEFAULT_MAX_BODY_MEMORY_BYTES,
  reclaimAfterBytes: DEFAULT_RECLAIM_AFTER_BYTES,
  maxJsonDepth: DEFAULT_MAX_JSON_DEPTH,
  drainTimeoutMs: DEFAULT_DRAIN_TIMEOUT_MS,
  loopThreshold: DEFAULT_CALL_LOOP_RULES.threshold,
  retryFactor: DEFAULT_RETRY_BOUNDS.retryFactor,
  retryFloorTokens: DEFAULT_RETRY_BOUNDS.retryFloorTokens,
});
