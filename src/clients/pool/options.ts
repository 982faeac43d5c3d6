/** `EndpointPool`'s options and status types, their checks, and each endpoint's default client. */
import { BackendError } from "../../core/errors.ts";
import type { LLMClient } from "../../core/types.ts";
import { UNREACHABLE_STATUS } from "../http.ts";
import { OllamaClient, type OllamaClientOptions } from "../ollama/client.ts";
import { OpenAICompatibleClient, type OpenAICompatibleClientOptions } from "../openai/compatible-client.ts";
import {
  type EndpointConfig,
  EndpointPoolConfigError,
  type PoolEndpointKind,
  type PoolEndpointOptions,
} from "./endpoint.ts";

/** Options of `EndpointPool`. */
export interface EndpointPoolOptions {
  /** The servers: URLs (llama-server, slots from `/props`) or `{ url, kind, slots }`. */
  endpoints: readonly (string | PoolEndpointOptions)[];
  /**
   * Options of each llama-server endpoint's `OpenAICompatibleClient` (its `baseUrl` is the
   * endpoint's). `retries` defaults to 0 here: the pool moves a call that cannot connect to another
   * endpoint itself, and a queue worker retries other backend failures from the last checkpoint.
   */
  clientOptions?: Omit<OpenAICompatibleClientOptions, "baseUrl">;
  /** Options of each Ollama endpoint's `OllamaClient`, its model at least (`retries` defaults to 0, as above). */
  ollamaOptions?: Omit<OllamaClientOptions, "baseUrl">;
  /** Build an endpoint's client yourself (a test double, a client with other options). */
  createClient?: (endpoint: EndpointConfig) => LLMClient;
  /** How often every endpoint is health-checked. Default 2 000 ms. */
  healthIntervalMs?: number;
  /** The deadline of one health check (`/health`, then `/props`). Default 2 000 ms. */
  healthTimeoutMs?: number;
  /**
   * How long a call waits while no endpoint is up before it fails with `EndpointsUnavailableError`.
   * Default 30 000 ms.
   */
  unavailableTimeoutMs?: number;
  /**
   * A run that has made no call for this long loses its endpoint (it is placed afresh on its next
   * call). `endRun` drops it at once. Default 60 000 ms.
   */
  stickyIdleMs?: number;
  /** Where endpoint up/down lines go. Default `console.warn`. */
  logger?: (line: string) => void;
}

/** One endpoint as the pool sees it now. */
export interface EndpointStatus {
  url: string;
  kind: PoolEndpointKind;
  up: boolean;
  /** Requests it takes at once; null until it was first seen up (slots from `/props`). */
  slots: number | null;
  inFlight: number;
  /** Calls waiting for one of its slots. */
  waiting: number;
  /** Runs that keep this endpoint (sticky). */
  runs: number;
  /** Why it is down; null while up. */
  error: string | null;
}

/** The pool's timings, with defaults applied. */
export type PoolTimings = Required<
  Pick<EndpointPoolOptions, "healthIntervalMs" | "healthTimeoutMs" | "unavailableTimeoutMs" | "stickyIdleMs">
>;

/**
 * The timings of `options`, with defaults.
 * @throws {EndpointPoolConfigError} naming a timing that is not a positive number of milliseconds.
 */
export function resolveTimings(options: EndpointPoolOptions): PoolTimings {
  return {
    healthIntervalMs: positive("healthIntervalMs", options.healthIntervalMs, 2_000),
    healthTimeoutMs: positive("healthTimeoutMs", options.healthTimeoutMs, 2_000),
    unavailableTimeoutMs: positive("unavailableTimeoutMs", options.unavailableTimeoutMs, 30_000),
    stickyIdleMs: positive("stickyIdleMs", options.stickyIdleMs, 60_000),
  };
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) {
    throw new EndpointPoolConfigError(`${name} must be a positive number of milliseconds, got ${value}`);
  }
  return value;
}

/** An endpoint's default client: retries off, the pool fails over instead. */
export function defaultClient(config: EndpointConfig, options: EndpointPoolOptions): LLMClient {
  if (config.kind === "llama-server") {
    return new OpenAICompatibleClient({ retries: 0, ...options.clientOptions, baseUrl: config.clientUrl });
  }
  if (!options.ollamaOptions) {
    throw new EndpointPoolConfigError(
      `Endpoint ${config.url} is an Ollama server: give ollamaOptions (at least its model) for its client`,
    );
  }
  return new OllamaClient({ retries: 0, ...options.ollamaOptions, baseUrl: config.clientUrl });
}

/** The transport could not reach the server or lost the connection (not an HTTP status it sent). */
export function isConnectionError(error: unknown): boolean {
  return (
    error instanceof BackendError && error.statusCode === UNREACHABLE_STATUS && error.cause instanceof Error
  );
}
