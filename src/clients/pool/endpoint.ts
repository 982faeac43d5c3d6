/**
 * One endpoint of an `EndpointPool`: its options (zod-checked), the URLs derived from them, and the
 * health probe that says whether it is up and how many requests it takes at once.
 */
import { z } from "zod";
import { BackendError, ForgeError } from "../../core/errors.ts";
import { describeErrorChain } from "../http.ts";
import { fetchServerProps } from "../llama-server/props.ts";

/** The pool was configured wrongly: no endpoints, a bad URL, a duplicate, a missing slot count. */
export class EndpointPoolConfigError extends ForgeError {}

/** The pool was closed; calls made after `close()` fail with it. */
export class EndpointPoolClosedError extends ForgeError {}

/**
 * No endpoint of the pool was up for the whole wait (`unavailableTimeoutMs`), or a call failed over
 * from every endpoint. A `BackendError` with status 503, so a queue worker retries the run from its
 * last checkpoint; `endpoints` says why each endpoint is out.
 */
export class EndpointsUnavailableError extends BackendError {
  readonly endpoints: readonly { url: string; error: string }[];
  constructor(endpoints: readonly { url: string; error: string }[], waitedMs: number) {
    const reasons = endpoints.map((endpoint) => `${endpoint.url}: ${endpoint.error}`).join("; ");
    super(
      503,
      reasons,
      `No endpoint of the pool was up for ${waitedMs} ms (${reasons}). Start the servers (llama-server ` +
        "answers GET /health with 200 once its model is loaded), fix their URLs, or raise unavailableTimeoutMs.",
    );
    this.endpoints = endpoints;
  }
}

/** The kinds of server a pool talks to. */
export type PoolEndpointKind = "llama-server" | "ollama";

/** One endpoint, as configured. */
export interface PoolEndpointOptions {
  /**
   * The server's address: `http://gpu-1:8080` for llama-server (a trailing `/v1` is accepted),
   * `http://gpu-1:11434` for Ollama.
   */
  url: string;
  /** Default `"llama-server"`. */
  kind?: PoolEndpointKind;
  /**
   * Requests it takes at once. Default for llama-server: `total_slots` from its `GET /props` (its
   * `-np`), read each time the endpoint comes up. Required for Ollama (its `OLLAMA_NUM_PARALLEL`).
   */
  slots?: number;
}

const endpointSchema = z.strictObject({
  url: z.string(),
  kind: z.enum(["llama-server", "ollama"]).default("llama-server"),
  slots: z.number().int().positive().optional(),
});

/** An endpoint after its options were checked: the server root and the URLs the pool uses. */
export interface EndpointConfig {
  /** The server root, without `/v1` or a trailing slash: the endpoint's name in errors and status. */
  url: string;
  kind: PoolEndpointKind;
  /** Configured slots; undefined: read from llama-server's `/props`. */
  slots: number | undefined;
  /** What a client is built on: `<root>/v1` for llama-server, the root for Ollama. */
  clientUrl: string;
  /** GET answers 200 while the server can take requests: `/health` (llama-server), `/api/version` (Ollama). */
  healthUrl: string;
}

/**
 * Check and normalise the configured endpoints.
 * @throws {EndpointPoolConfigError} saying what to fix: no endpoints, a value that is not an
 * http(s) URL, the same server twice, a bad slot count, an Ollama endpoint without `slots`.
 */
export function parseEndpoints(endpoints: readonly (string | PoolEndpointOptions)[]): EndpointConfig[] {
  if (!Array.isArray(endpoints) || endpoints.length === 0) {
    throw new EndpointPoolConfigError(
      'An endpoint pool needs at least one endpoint, e.g. endpoints: ["http://127.0.0.1:8080"]',
    );
  }
  const configs = endpoints.map((endpoint, index) => parseEndpoint(endpoint, index));
  const seen = new Set<string>();
  for (const config of configs) {
    if (seen.has(config.url)) {
      throw new EndpointPoolConfigError(
        `Endpoint ${config.url} is listed twice; list each server once and give it its slot count`,
      );
    }
    seen.add(config.url);
  }
  return configs;
}

function parseEndpoint(endpoint: string | PoolEndpointOptions, index: number): EndpointConfig {
  const parsed = endpointSchema.safeParse(typeof endpoint === "string" ? { url: endpoint } : endpoint);
  if (!parsed.success) {
    throw new EndpointPoolConfigError(`Endpoint ${index}: ${z.prettifyError(parsed.error)}`);
  }
  const { kind, slots } = parsed.data;
  let address: URL;
  try {
    address = new URL(parsed.data.url);
  } catch {
    throw new EndpointPoolConfigError(
      `Endpoint ${index}: ${JSON.stringify(parsed.data.url)} is not a URL; write it as http://host:port`,
    );
  }
  if (address.protocol !== "http:" && address.protocol !== "https:") {
    throw new EndpointPoolConfigError(
      `Endpoint ${index}: ${parsed.data.url} is not an http(s) URL; write it as http://host:port`,
    );
  }
  if (kind === "ollama" && slots === undefined) {
    throw new EndpointPoolConfigError(
      `Endpoint ${parsed.data.url}: Ollama does not report its parallel slots; set slots to its OLLAMA_NUM_PARALLEL`,
    );
  }
  const url = `${address.origin}${address.pathname}`.replace(/\/+$/, "").replace(/\/v1$/, "");
  return {
    url,
    kind,
    slots,
    clientUrl: kind === "llama-server" ? `${url}/v1` : url,
    healthUrl: kind === "llama-server" ? `${url}/health` : `${url}/api/version`,
  };
}

/** What a probe found: up with its slot count, or down and why. */
export type ProbeResult = { up: true; slots: number } | { up: false; error: string };

/**
 * Ask an endpoint whether it is up, within `timeoutMs`: its health URL must answer 200; a
 * llama-server without configured slots must then report `total_slots` in `/props`.
 */
export async function probeEndpoint(
  config: EndpointConfig,
  timeoutMs: number,
  apiKey?: string,
): Promise<ProbeResult> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const response = await fetch(config.healthUrl, {
      signal,
      ...(apiKey && { headers: { authorization: `Bearer ${apiKey}` } }),
    });
    const body = await response.text();
    if (!response.ok) {
      return {
        up: false,
        error: `GET ${config.healthUrl} answered HTTP ${response.status}: ${body.slice(0, 200)}`,
      };
    }
    if (config.slots !== undefined) return { up: true, slots: config.slots };
    const props = await fetchServerProps(config.url, signal, apiKey);
    if (props.totalSlots === null) {
      return {
        up: false,
        error: `${config.url}/props reports no total_slots; set slots for this endpoint`,
      };
    }
    return { up: true, slots: props.totalSlots };
  } catch (error) {
    if (signal.aborted) return { up: false, error: `no answer to its health check within ${timeoutMs} ms` };
    return { up: false, error: error instanceof Error ? describeErrorChain(error) : String(error) };
  }
}
