/**
 * HTTP plumbing shared by the HTTP clients: one ky instance that never retries, an idle deadline
 * that covers the whole exchange (waiting for headers and every read of the body), and the mapping
 * of transport failures to the library's errors.
 */
import ky, { type KyInstance } from "ky";
import { BackendError, StreamError } from "../core/errors.ts";
import { isRedirect } from "../core/transient.ts";
import { IdleTimer } from "./idle-timer.ts";

/** `BackendError.statusCode` of a request that got nothing from the server within `timeoutMs`. */
export const TIMEOUT_STATUS = 408;
/**
 * `BackendError.statusCode` when the server could not be reached or the connection broke before a
 * complete answer (connection refused, reset, DNS failure): the service is unavailable. The body is
 * the transport's error message, e.g. `fetch failed: connect ECONNREFUSED 127.0.0.1:8080`.
 */
export const UNREACHABLE_STATUS = 503;
/**
 * `BackendError.statusCode` when the server answered 2xx with something that is not the documented
 * wire shape (malformed JSON, missing fields): a bad answer from the upstream. The body is what it sent.
 */
export const BAD_RESPONSE_STATUS = 502;

/**
 * The ky instance every client uses. Clients never retry (the loop does), HTTP errors are read and
 * turned into `BackendError` by the caller (it needs the body first), and ky's own timeout is off:
 * it only covers the wait for response headers, while a stalled body or stream must time out too.
 */
export const http: KyInstance = ky.create({ retry: 0, timeout: false, throwHttpErrors: false });

/** What one HTTP exchange needs. */
export interface ExchangeOptions {
  method: "GET" | "POST";
  url: string;
  json?: unknown;
  headers?: Record<string, string>;
  /** Longest wait for the server to send anything: the headers, then each chunk of the body. */
  timeoutMs: number;
  signal?: AbortSignal | undefined;
}

/**
 * Aborts an exchange when the server stays silent for `timeoutMs`; every received chunk restarts
 * the wait (an `IdleTimer`).
 */
export class IdleDeadline {
  readonly #controller = new AbortController();
  readonly #timer: IdleTimer;
  #error: BackendError | undefined;

  constructor(timeoutMs: number, url: string) {
    this.#timer = new IdleTimer(timeoutMs, () => {
      const body = `No response from ${url} for ${timeoutMs} ms`;
      this.#error = new BackendError(TIMEOUT_STATUS, body, `Request timed out: ${body}`);
      this.#controller.abort(this.#error);
    });
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** The 408 error, once the deadline has passed. */
  get error(): BackendError | undefined {
    return this.#error;
  }

  /** Restart the wait. */
  touch(): void {
    this.#timer.touch();
  }

  stop(): void {
    this.#timer.stop();
  }

  /**
   * Abort with `signal` too, so one signal covers the caller's abort and the deadline (cheaper
   * than `AbortSignal.any` on every request). Returns the function that stops following it.
   */
  follow(signal: AbortSignal): () => void {
    if (signal.aborted) {
      this.#controller.abort(signal.reason);
      return () => {};
    }
    const abort = () => this.#controller.abort(signal.reason);
    signal.addEventListener("abort", abort, { once: true });
    return () => signal.removeEventListener("abort", abort);
  }
}

/** Where a transport failure happened: it decides which error reports it. */
type Phase = "request" | "body" | "stream";

/**
 * How long `Exchange.release` lets the rest of a body arrive before it gives up the connection.
 * Servers end the response right after their last event, so this is only a bound for odd ones.
 */
const RELEASE_GRACE_MS = 1_000;

/** An open HTTP exchange: the response, with its body read under the same deadline and signal. */
export class Exchange {
  readonly response: Response;
  readonly #deadline: IdleDeadline;
  readonly #options: ExchangeOptions;
  readonly #unfollow: () => void;
  #reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  #decoder: TextDecoder | undefined;
  /** Whether the body was read to its end (or there was none): the connection is free again. */
  #ended = false;
  #closed = false;

  constructor(response: Response, deadline: IdleDeadline, options: ExchangeOptions, unfollow: () => void) {
    this.response = response;
    this.#deadline = deadline;
    this.#options = options;
    this.#unfollow = unfollow;
  }

  get ok(): boolean {
    return this.response.ok;
  }

  get status(): number {
    return this.response.status;
  }

  /** The server's `Retry-After` header, as sent. */
  get retryAfter(): string | null {
    return this.response.headers.get("retry-after");
  }

  /** The whole body as text. */
  async text(): Promise<string> {
    let text = "";
    for (let piece = await this.read("body"); piece !== null; piece = await this.read("body")) text += piece;
    return text;
  }

  /**
   * The next piece of the body as decoded text, as it arrives; `null` at its end. A connection
   * that breaks mid-body is a `StreamError` for a stream (it was truncated) and a 503
   * `BackendError` otherwise.
   */
  async read(phase: "body" | "stream" = "stream"): Promise<string | null> {
    if (this.#ended || this.#closed) return null;
    const reader = this.#openReader();
    if (!reader) return this.#end();
    while (true) {
      let result: ReadableStreamReadResult<Uint8Array>;
      try {
        result = await reader.read();
      } catch (error) {
        this.close();
        throw transportError(error, phase, this.#deadline, this.#options);
      }
      if (result.done) {
        const rest = this.#decoder?.decode() ?? "";
        this.#end();
        return rest.length > 0 ? rest : null;
      }
      this.#deadline.touch();
      this.#decoder ??= new TextDecoder();
      const text = this.#decoder.decode(result.value, { stream: true });
      // An empty piece is half a multi-byte character: wait for the rest.
      if (text.length > 0) return text;
    }
  }

  /** Drop the exchange without reading (or without finishing) its body. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#finish();
    if (this.#ended) return;
    // Cancelling an unfinished body closes the connection: it cannot carry another request.
    const cancelled = this.#reader ? this.#reader.cancel() : this.response.body?.cancel();
    cancelled?.catch(() => {});
  }

  /**
   * Done with the answer (a stream's last event came), but the body may not have ended yet: read
   * what is left in the background, so the connection goes back to the pool for the next request
   * instead of being torn down. Gives up, closing it, after `RELEASE_GRACE_MS`.
   */
  release(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#finish();
    const reader = this.#ended ? undefined : this.#openReader();
    if (!reader) return;
    const giveUp = setTimeout(() => reader.cancel().catch(() => {}), RELEASE_GRACE_MS);
    giveUp.unref();
    const drain = async () => {
      while (!(await reader.read()).done) {
        // The answer is complete: whatever follows is dropped.
      }
    };
    drain()
      .catch(() => {})
      .finally(() => clearTimeout(giveUp));
  }

  #openReader(): ReadableStreamDefaultReader<Uint8Array> | undefined {
    if (!this.#reader && this.response.body) this.#reader = this.response.body.getReader();
    return this.#reader;
  }

  #end(): null {
    this.#ended = true;
    this.#finish();
    return null;
  }

  #finish(): void {
    this.#deadline.stop();
    this.#unfollow();
  }
}

/**
 * Send a request and wait for its response headers. Transport failures are mapped: the caller's
 * abort rethrows the abort reason, silence past `timeoutMs` is `BackendError(408)`, an unreachable
 * server is `BackendError(503)`. HTTP error statuses are returned, not thrown.
 */
export async function openExchange(options: ExchangeOptions): Promise<Exchange> {
  const deadline = new IdleDeadline(options.timeoutMs, options.url);
  const unfollow = options.signal ? deadline.follow(options.signal) : () => {};
  const { url, method } = options;
  const init: RequestInit = {
    method,
    headers: options.json === undefined ? options.headers : jsonHeaders(options.headers),
    body: options.json === undefined ? null : JSON.stringify(options.json),
    signal: deadline.signal,
    // An API call is not redirected: a redirect fails loudly (see `transportError`) instead of
    // replaying the request elsewhere. It also spares fetch a clone of every request (its headers
    // and a tee of its body), which it makes only while redirects may be followed: about 0.025 ms
    // CPU per call, measured on a one-token stream.
    redirect: "error",
  };
  try {
    // ky runs the exchange; its documented `fetch` option (a custom fetch) is the transport, and
    // ours sends the body string and the deadline's signal straight to `globalThis.fetch`. Given
    // the body and signal itself, ky would wrap the body in a `Request`, clone it (teeing the
    // stream) and join the signals with `AbortSignal.any` on every call: about 0.4–0.6 ms CPU per
    // call, measured against llama-server. `globalThis.fetch` is read per call, so a fetch
    // installed later (a test spy, a benchmark's tap) still sees every request.
    const response = await http(url, { method, fetch: () => globalThis.fetch(url, init) });
    deadline.touch();
    return new Exchange(response, deadline, options, unfollow);
  } catch (error) {
    deadline.stop();
    unfollow();
    throw transportError(error, "request", deadline, options);
  }
}

function transportError(error: unknown, phase: Phase, deadline: IdleDeadline, options: ExchangeOptions) {
  if (options.signal?.aborted) return options.signal.reason ?? error;
  if (deadline.error) return deadline.error;
  if (!isNetworkError(error)) return error;
  const detail = describeErrorChain(error);
  if (isRedirect(error)) {
    return new BackendError(
      BAD_RESPONSE_STATUS,
      detail,
      `${options.url} answered with a redirect, which the client does not follow (it would send the ` +
        "request to another address): set the client's base URL to the address the server redirects to",
      { cause: error },
    );
  }
  if (phase === "stream") {
    return new StreamError(`Stream from ${options.url} was cut off: the connection closed (${detail})`);
  }
  return new BackendError(
    UNREACHABLE_STATUS,
    detail,
    `Cannot reach ${options.url}${phase === "body" ? " (connection lost mid-response)" : ""}: ${detail}`,
    { cause: error },
  );
}

/** fetch reports every network failure as a TypeError whose cause says what happened. */
function isNetworkError(error: unknown): error is Error {
  return error instanceof TypeError || (error instanceof Error && typeof errorCode(error) === "string");
}

function errorCode(error: Error): unknown {
  return (error as { code?: unknown }).code;
}

/**
 * An error's message and those of its causes, up to four, each once:
 * `fetch failed: connect ECONNREFUSED 127.0.0.1:8080`.
 */
export function describeErrorChain(error: Error): string {
  const parts: string[] = [];
  let current: unknown = error;
  while (current instanceof Error && parts.length < 4) {
    if (current.message && !parts.includes(current.message)) parts.push(current.message);
    current = current.cause;
  }
  return parts.join(": ") || error.name;
}

const JSON_CONTENT_TYPE = { "content-type": "application/json" } as const;

/** The headers of a JSON body: `headers` with its content type. */
function jsonHeaders(headers: Record<string, string> | undefined): Record<string, string> {
  return headers ? { ...headers, ...JSON_CONTENT_TYPE } : JSON_CONTENT_TYPE;
}

/** Joins a base URL and a path without doubling or dropping the slash. */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`;
}

/** Authorization header for an API key, when there is one. */
export function authHeaders(apiKey: string | undefined): Record<string, string> | undefined {
  return apiKey ? { authorization: `Bearer ${apiKey}` } : undefined;
}
