/**
 * The proxy's HTTP transport to its backend: node:http(s) over a keep-alive pool, one write per
 * request, a deadline on the response headers, an idle deadline between body reads, a cap on the
 * answer's size, and transport failures mapped to 502 (unreachable, too large) and 504 (timeout).
 * Lighter than `fetch` on the hot path: no web streams unless a response really streams.
 */
import {
  type ClientRequest,
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingMessage,
} from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { IdleTimer } from "../../clients/idle-timer.ts";
import { ProxyErrorKind, ProxyHttpError, toProxyHttpError } from "../errors.ts";
import { sseErrorEvent } from "../stream-error.ts";
import type { ForwardRequest } from "./backend.ts";

/** Default idle deadline between two reads of a backend body: 5 minutes. */
export const DEFAULT_IDLE_TIMEOUT_MS = 300_000;
/** Default cap on a backend answer: 32 MiB (a chat answer is kilobytes). */
export const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

/** Limits on reading a backend body. */
export interface BodyLimits {
  /** Longest silence between two reads of the body (0: none); 504 past it. */
  idleTimeoutMs: number;
  /** Largest answer in bytes, declared or streamed; 502 past it. */
  maxResponseBytes: number;
}

/** A backend answer read in full. */
export interface BufferedAnswer {
  status: number;
  contentType: string | undefined;
  /** The backend's `Retry-After` header, as sent. */
  retryAfter: string | undefined;
  body: Buffer;
}

/** Sends requests to one backend origin. */
export class BackendTransport {
  readonly #origin: URL;
  readonly #basePath: string;
  readonly #headers: Record<string, string>;
  readonly #timeoutMs: number;
  readonly #limits: BodyLimits;
  readonly #agent: HttpAgent;
  readonly #request: typeof httpRequest;

  constructor(
    options: { baseUrl: string; headers: Record<string, string>; timeoutMs: number } & Partial<BodyLimits>,
  ) {
    this.#origin = new URL(options.baseUrl);
    this.#basePath = this.#origin.pathname.replace(/\/+$/, "");
    this.#headers = options.headers;
    this.#timeoutMs = options.timeoutMs;
    this.#limits = {
      idleTimeoutMs: options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
      maxResponseBytes: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    };
    const https = this.#origin.protocol === "https:";
    this.#agent = https
      ? new HttpsAgent({ keepAlive: true, scheduling: "lifo" })
      : new HttpAgent({ keepAlive: true, scheduling: "lifo" });
    this.#request = https ? (httpsRequest as typeof httpRequest) : httpRequest;
  }

  /** Send and wait for the response headers; the body is left to read. */
  open(request: ForwardRequest, timeoutMs = this.#timeoutMs): Promise<IncomingMessage> {
    const { signal } = request;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<IncomingMessage>((resolve, reject) => {
      let settled = false;
      const outgoing = this.#send(request);
      const fail = (error: unknown) => {
        if (settled) return;
        settled = true;
        cleanup();
        reject(error);
      };
      const timer = setTimeout(() => {
        fail(headersTimeout(timeoutMs));
        outgoing.destroy();
      }, timeoutMs);
      const onAbort = () => {
        fail(signal?.reason);
        outgoing.destroy();
      };
      const cleanup = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      outgoing.once("response", (incoming) => {
        if (settled) return incoming.destroy();
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        if (signal) {
          // While the body is read, a client that leaves still stops the backend.
          const destroy = () => incoming.destroy(signal.reason instanceof Error ? signal.reason : undefined);
          signal.addEventListener("abort", destroy, { once: true });
          incoming.once("close", () => signal.removeEventListener("abort", destroy));
        }
        resolve(incoming);
      });
      outgoing.once("error", (error) => fail(transportError(error)));
    });
  }

  /**
   * Send and read the whole answer: `open` and `readAll` in one step, with one abort listener
   * and one promise for the whole exchange (the guarded path's hot loop).
   */
  exchange(request: ForwardRequest, timeoutMs = this.#timeoutMs): Promise<BufferedAnswer> {
    const { signal } = request;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<BufferedAnswer>((resolve, reject) => {
      let incoming: IncomingMessage | undefined;
      let settled = false;
      const outgoing = this.#send(request);
      const settle = (error: unknown, answer?: BufferedAnswer) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener("abort", abort);
        if (answer) resolve(answer);
        else reject(error);
      };
      const timer = setTimeout(() => {
        settle(headersTimeout(timeoutMs));
        outgoing.destroy();
      }, timeoutMs);
      // A client that leaves stops the backend, before and while the answer is read.
      const abort = () => {
        settle(signal?.reason);
        if (incoming) incoming.destroy(signal?.reason instanceof Error ? signal.reason : undefined);
        else outgoing.destroy();
      };
      signal?.addEventListener("abort", abort, { once: true });
      outgoing.once("response", (response) => {
        if (settled) return response.destroy();
        clearTimeout(timer);
        incoming = response;
        collectBody(response, this.#limits, (error, body) => {
          if (body === undefined) settle(error instanceof ProxyHttpError ? error : lostMidResponse(error));
          else
            settle(undefined, {
              status: response.statusCode ?? 502,
              contentType: response.headers["content-type"],
              retryAfter: response.headers["retry-after"],
              body,
            });
        });
      });
      outgoing.once("error", (error) => settle(transportError(error)));
    });
  }

  /** Start a request on the pool; its body, if any, is sent at once. */
  #send(request: ForwardRequest): ClientRequest {
    const body = request.body === undefined ? undefined : Buffer.from(request.body);
    const outgoing = this.#request({
      protocol: this.#origin.protocol,
      hostname: this.#origin.hostname,
      port: this.#origin.port,
      path: `${this.#basePath}${request.path}`,
      method: request.method,
      agent: this.#agent,
      headers: body ? { ...this.#headers, "content-length": body.length } : this.#headers,
    });
    outgoing.end(body);
    return outgoing;
  }

  /**
   * Send and answer with a web `Response`: event streams stay streams (so tokens flow as the
   * backend sends them), everything else is read first. A stream that stalls, overflows, loses
   * its backend or outlives the request's deadline ends with an OpenAI error event (the routes
   * that forward speak OpenAI).
   */
  async forward(request: ForwardRequest): Promise<Response> {
    const incoming = await this.open(request);
    const status = incoming.statusCode ?? 502;
    const contentType = incoming.headers["content-type"];
    const headers: Record<string, string> = {};
    if (contentType) headers["content-type"] = contentType;
    const retryAfter = incoming.headers["retry-after"];
    if (retryAfter) headers["retry-after"] = retryAfter;
    if (contentType?.startsWith("text/event-stream")) {
      headers["cache-control"] = "no-cache";
      return new Response(streamBody(incoming, this.#limits, request.signal), { status, headers });
    }
    const body = await readAll(incoming, this.#limits, request.signal);
    return new Response(
      body.length > 0
        ? (new Uint8Array(body.buffer, body.byteOffset, body.length) as Uint8Array<ArrayBuffer>)
        : null,
      {
        status,
        headers,
      },
    );
  }

  /** Close pooled connections. */
  close(): void {
    this.#agent.destroy();
  }
}

function readAll(
  incoming: IncomingMessage,
  limits: BodyLimits,
  signal: AbortSignal | undefined,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    collectBody(incoming, limits, (error, body) => {
      if (body !== undefined) resolve(body);
      else if (signal?.aborted) reject(signal.reason ?? error);
      else reject(error instanceof ProxyHttpError ? error : lostMidResponse(error));
    });
  });
}

/**
 * Read a body to its end with plain stream events (cheaper than an async iterator), under
 * `limits`. `done` gets the body, or the error (possibly none) of a connection that closed first
 * or of a broken limit; it may be called more than once, and callers keep the first call.
 */
function collectBody(
  incoming: IncomingMessage,
  limits: BodyLimits,
  done: (error: unknown, body?: Buffer) => void,
): void {
  const chunks: Buffer[] = [];
  let size = 0;
  const watch = new BodyWatch(incoming, limits, (error) => {
    // Dropped first, so the chunks already read can be collected at once.
    chunks.length = 0;
    incoming.destroy();
    done(error);
  });
  if (watch.stopped) return;
  incoming.on("data", (chunk: Buffer) => {
    if (!watch.received(chunk.length)) return;
    chunks.push(chunk);
    size += chunk.length;
  });
  incoming.on("error", (error) => {
    watch.stop();
    done(error);
  });
  incoming.once("end", () => {
    watch.stop();
    done(undefined, chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
  });
  incoming.once("close", () => {
    watch.stop();
    if (!incoming.readableEnded) done(undefined);
  });
}

/**
 * An event stream passed on as the backend sends it, with backpressure (the backend is read no
 * faster than the client takes it), under `limits` and the request's signal. A fault after the
 * first byte cannot change the status: the stream ends with an error event. A client that leaves
 * closes the backend's connection.
 */
function streamBody(
  incoming: IncomingMessage,
  limits: BodyLimits,
  signal: AbortSignal | undefined,
): ReadableStream<Uint8Array> {
  let finished = false;
  let watch: BodyWatch | undefined;
  let onAbort: (() => void) | undefined;
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const finish = (error?: ProxyHttpError) => {
          if (finished) return;
          finished = true;
          watch?.stop();
          if (onAbort) signal?.removeEventListener("abort", onAbort);
          if (!incoming.readableEnded) incoming.destroy();
          if (error) controller.enqueue(Buffer.from(sseErrorEvent("openai", error)));
          controller.close();
        };
        // The deadline's 504 ends the stream with an event; a client that left needs none.
        const abortError = () => (signal?.reason instanceof ProxyHttpError ? signal.reason : undefined);
        onAbort = () => finish(abortError());
        if (signal?.aborted) return finish(abortError());
        signal?.addEventListener("abort", onAbort, { once: true });
        watch = new BodyWatch(incoming, limits, finish);
        if (watch.stopped) return;
        incoming.on("data", (chunk: Buffer) => {
          if (finished || !watch?.received(chunk.length)) return;
          controller.enqueue(chunk);
          if ((controller.desiredSize ?? 1) <= 0) {
            incoming.pause();
            watch.pause();
          }
        });
        incoming.on("error", () => {});
        incoming.once("end", () => finish());
        incoming.once("close", () => {
          if (!incoming.readableEnded) finish(signal?.aborted ? abortError() : lostMidResponse(undefined));
        });
      },
      pull() {
        if (!finished && incoming.isPaused()) {
          watch?.resume();
          incoming.resume();
        }
      },
      cancel() {
        finished = true;
        watch?.stop();
        if (onAbort) signal?.removeEventListener("abort", onAbort);
        incoming.destroy();
      },
    },
    { highWaterMark: 16 },
  );
}

/**
 * The limits of one body being read: its size (declared, then counted) and the backend's silence
 * between reads (an `IdleTimer`: time the reader spends paused for a slow client is not the
 * backend's silence).
 */
class BodyWatch {
  readonly #limits: BodyLimits;
  readonly #fault: (error: ProxyHttpError) => void;
  #idle: IdleTimer | undefined;
  #size = 0;
  #stopped = false;

  constructor(incoming: IncomingMessage, limits: BodyLimits, fault: (error: ProxyHttpError) => void) {
    this.#limits = limits;
    this.#fault = fault;
    const declared = Number(incoming.headers["content-length"] ?? Number.NaN);
    if (declared > limits.maxResponseBytes) {
      this.#fail(tooLargeAnswer(limits.maxResponseBytes));
      return;
    }
    if (limits.idleTimeoutMs > 0) {
      this.#idle = new IdleTimer(limits.idleTimeoutMs, () =>
        this.#fail(
          new ProxyHttpError(
            504,
            ProxyErrorKind.BACKEND_TIMEOUT,
            `Backend sent nothing for ${limits.idleTimeoutMs} ms in the middle of its answer (--idle-timeout)`,
          ),
        ),
      );
    }
  }

  /** Whether the watch is over (the body ended or a limit broke). */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** Count a chunk and restart the wait; false when it broke the size cap (reported already). */
  received(length: number): boolean {
    if (this.#stopped) return false;
    this.#idle?.touch();
    this.#size += length;
    if (this.#size <= this.#limits.maxResponseBytes) return true;
    this.#fail(tooLargeAnswer(this.#limits.maxResponseBytes));
    return false;
  }

  pause(): void {
    this.#idle?.pause();
  }

  resume(): void {
    this.#idle?.resume();
  }

  stop(): void {
    this.#stopped = true;
    this.#idle?.stop();
  }

  #fail(error: ProxyHttpError): void {
    this.stop();
    this.#fault(error);
  }
}

function tooLargeAnswer(maxBytes: number): ProxyHttpError {
  return new ProxyHttpError(
    502,
    ProxyErrorKind.BACKEND_ERROR,
    `Backend answer exceeds ${maxBytes} bytes (--max-response-bytes); it was dropped`,
  );
}

function headersTimeout(timeoutMs: number): ProxyHttpError {
  return new ProxyHttpError(
    504,
    ProxyErrorKind.BACKEND_TIMEOUT,
    `Backend did not answer within ${timeoutMs} ms`,
  );
}

function lostMidResponse(error: unknown): ProxyHttpError {
  return new ProxyHttpError(502, ProxyErrorKind.BACKEND_UNREACHABLE, "Backend connection lost mid-response", {
    cause: error,
  });
}

function transportError(error: unknown): ProxyHttpError {
  const mapped = toProxyHttpError(error);
  if (mapped.kind !== ProxyErrorKind.INTERNAL) return mapped;
  return new ProxyHttpError(
    502,
    ProxyErrorKind.BACKEND_UNREACHABLE,
    `Backend unreachable: ${mapped.message}`,
    {
      cause: error,
    },
  );
}
