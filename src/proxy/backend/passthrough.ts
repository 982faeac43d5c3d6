/**
 * Requests the proxy forwards without guardrails (model list, `/props`, tool-less chat): the
 * backend's status, content type and body go back as they came, streams included. Under
 * `--serialize` the slot is held until the body has been sent; the request's deadline, when it
 * has one, runs until then too.
 */
import { BackendError } from "../../core/errors.ts";
import { ProxyErrorKind, parseRetryAfter, toProxyHttpError } from "../errors.ts";
import type { Release, RequestDeadline, SerialGate } from "../http/index.ts";
import type { RequestStats } from "../request-stats.ts";
import type { ForwardRequest, ProxyBackend } from "./backend.ts";

/**
 * Forward `request` and answer with what the backend said. Backend 5xx, 401 and 403 answers
 * become 502. With a `deadline`, the request runs under its signal, and a request it cuts short
 * fails with its 504. `stats`, when given, counts the call and the wait for the backend's answer
 * (its headers, for a stream).
 */
export async function forwardToBackend(
  backend: ProxyBackend,
  request: ForwardRequest,
  serialGate?: SerialGate,
  deadline?: RequestDeadline,
  stats?: RequestStats,
): Promise<Response> {
  if (deadline) request = { ...request, signal: deadline.signal };
  let release: Release | undefined;
  let upstream: Response;
  try {
    release = serialGate ? await serialGate.acquire(request.signal) : undefined;
    const started = performance.now();
    if (stats) stats.backendCalls += 1;
    try {
      upstream = await backend.forward(request);
    } finally {
      if (stats) stats.backendMs += performance.now() - started;
    }
  } catch (error) {
    release?.();
    deadline?.stop();
    throw deadline?.error ?? error;
  }
  // The backend's credential is the operator's, not the client's: 401/403 from it are a proxy fault.
  if (upstream.status >= 500 || upstream.status === 401 || upstream.status === 403) {
    const body = await upstream.text().finally(() => {
      release?.();
      deadline?.stop();
    });
    const retryAfterSeconds = parseRetryAfter(upstream.headers.get("retry-after"));
    throw toProxyHttpError(new BackendError(upstream.status, body, undefined, { retryAfterSeconds }));
  }
  // A prompt over the context is answered in the shape clients handle (context_length_exceeded).
  if (upstream.status === 400) {
    const body = await upstream.text().finally(() => {
      release?.();
      deadline?.stop();
    });
    const error = toProxyHttpError(new BackendError(400, body));
    if (error.kind === ProxyErrorKind.CONTEXT_LENGTH_EXCEEDED) throw error;
    const headers = new Headers(upstream.headers);
    headers.delete("content-length");
    headers.delete("content-encoding");
    return new Response(body, { status: 400, headers });
  }
  // A streamed answer holds the slot and the deadline until it has been sent; others are read already.
  if (!upstream.headers.get("content-type")?.startsWith("text/event-stream") || !upstream.body) {
    release?.();
    deadline?.stop();
    return upstream;
  }
  if (!release && !deadline?.active) return upstream;
  const done = () => {
    release?.();
    deadline?.stop();
  };
  return new Response(releaseWhenDone(upstream.body, done, request.signal), {
    status: upstream.status,
    headers: upstream.headers,
  });
}

function releaseWhenDone(
  body: ReadableStream<Uint8Array>,
  release: Release,
  signal: AbortSignal | undefined,
): ReadableStream<Uint8Array> {
  signal?.addEventListener("abort", release, { once: true });
  const done = () => {
    signal?.removeEventListener("abort", release);
    release();
  };
  return body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({ flush: done }));
}
