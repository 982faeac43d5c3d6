/**
 * The proxy's HTTP transport to its backend: node:http(s) over a keep-alive pool, one write per
 * request, a deadline on the response headers, and transport failures mapped to 502 (unreachable)
 * and 504 (timeout). Lighter than `fetch` on the hot path: no web streams unless a response
 * really streams.
 */
import {
  type ClientRequest,
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingMessage,
} from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { Readable } from "node:stream";
import type { ForwardRequest } from "./backend.ts";
import { ProxyErrorKind, ProxyHttpError, toProxyHttpError } from "./errors.ts";

/** A backend answer read in full. */
export interface BufferedAnswer {
  status: number;
  contentType: string | undefined;
  body: Buffer;
}

/** Sends requests to one backend origin. */
export class BackendTransport {
  readonly #origin: URL;
  readonly #basePath: string;
  readonly #headers: Record<string, string>;
  readonly #timeoutMs: number;
  readonly #agent: HttpAgent;
  readonly #request: typeof httpRequest;

  constructor(options: { baseUrl: string; headers: Record<string, string>; timeoutMs: number }) {
    this.#origin = new URL(options.baseUrl);
    this.#basePath = this.#origin.pathname.replace(/\/+$/, "");
    this.#headers = options.headers;
    this.#timeoutMs = options.timeoutMs;
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
        collectBody(response, (error, body) => {
          if (body === undefined) settle(lostMidResponse(error));
          else
            settle(undefined, {
              status: response.statusCode ?? 502,
              contentType: response.headers["content-type"],
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
   * backend sends them), everything else is read first.
   */
  async forward(request: ForwardRequest): Promise<Response> {
    const incoming = await this.open(request);
    const status = incoming.statusCode ?? 502;
    const contentType = incoming.headers["content-type"];
    const headers: Record<string, string> = {};
    if (contentType) headers["content-type"] = contentType;
    if (contentType?.startsWith("text/event-stream")) {
      headers["cache-control"] = "no-cache";
      return new Response(Readable.toWeb(incoming) as ReadableStream<Uint8Array>, { status, headers });
    }
    const body = await readAll(incoming, request.signal);
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

function readAll(incoming: IncomingMessage, signal: AbortSignal | undefined): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    collectBody(incoming, (error, body) => {
      if (body !== undefined) resolve(body);
      else reject(signal?.aborted ? (signal.reason ?? error) : lostMidResponse(error));
    });
  });
}

/**
 * Read a body to its end with plain stream events (cheaper than an async iterator). `done` gets
 * the body, or the error (possibly none) of a connection that closed first; it may be called
 * more than once, and callers keep the first call.
 */
function collectBody(incoming: IncomingMessage, done: (error: unknown, body?: Buffer) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  incoming.on("data", (chunk: Buffer) => {
    chunks.push(chunk);
    size += chunk.length;
  });
  incoming.on("error", (error) => done(error));
  incoming.once("end", () =>
    done(undefined, chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size)),
  );
  incoming.once("close", () => {
    if (!incoming.readableEnded) done(undefined);
  });
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
