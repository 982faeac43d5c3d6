/**
 * The proxy's HTTP transport to its backend: node:http(s) over a keep-alive pool, one write per
 * request, a deadline on the response headers, and transport failures mapped to 502 (unreachable)
 * and 504 (timeout). Lighter than `fetch` on the hot path: no web streams unless a response
 * really streams.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
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
  readonly #headers: Record<string, string>;
  readonly #timeoutMs: number;
  readonly #agent: HttpAgent;
  readonly #request: typeof httpRequest;

  constructor(options: { baseUrl: string; headers: Record<string, string>; timeoutMs: number }) {
    this.#origin = new URL(options.baseUrl);
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
    const body = request.body === undefined ? undefined : Buffer.from(request.body);
    const basePath = this.#origin.pathname.replace(/\/+$/, "");
    return new Promise<IncomingMessage>((resolve, reject) => {
      let settled = false;
      const outgoing = this.#request({
        protocol: this.#origin.protocol,
        hostname: this.#origin.hostname,
        port: this.#origin.port,
        path: `${basePath}${request.path}`,
        method: request.method,
        agent: this.#agent,
        headers: body ? { ...this.#headers, "content-length": body.length } : this.#headers,
      });
      const fail = (error: unknown) => {
        if (settled) return;
        settled = true;
        cleanup();
        reject(error);
      };
      const timer = setTimeout(() => {
        fail(
          new ProxyHttpError(
            504,
            ProxyErrorKind.BACKEND_TIMEOUT,
            `Backend did not answer within ${timeoutMs} ms`,
          ),
        );
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
      outgoing.end(body);
    });
  }

  /** Send and read the whole answer. */
  async exchange(request: ForwardRequest, timeoutMs?: number): Promise<BufferedAnswer> {
    const incoming = await this.open(request, timeoutMs);
    return {
      status: incoming.statusCode ?? 502,
      contentType: incoming.headers["content-type"],
      body: await readAll(incoming, request.signal),
    };
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

async function readAll(incoming: IncomingMessage, signal: AbortSignal | undefined): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of incoming) {
      chunks.push(chunk as Buffer);
      size += (chunk as Buffer).length;
    }
  } catch (error) {
    if (signal?.aborted) throw signal.reason ?? error;
    throw new ProxyHttpError(
      502,
      ProxyErrorKind.BACKEND_UNREACHABLE,
      "Backend connection lost mid-response",
      {
        cause: error,
      },
    );
  }
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
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
