/**
 * Requests the proxy forwards without guardrails (model list, `/props`, tool-less chat): the
 * backend's status, content type and body go back as they came, streams included. Under
 * `--serialize` the slot is held until the body has been sent.
 */
import { BackendError } from "../core/errors.ts";
import type { ForwardRequest, ProxyBackend } from "./backend.ts";
import { toProxyHttpError } from "./errors.ts";
import type { Release, SerialQueue } from "./serial-queue.ts";

/** Forward `request` and answer with what the backend said. Backend 5xx, 401 and 403 answers become 502. */
export async function forwardToBackend(
  backend: ProxyBackend,
  request: ForwardRequest,
  queue?: SerialQueue,
): Promise<Response> {
  const release = queue ? await queue.acquire(request.signal) : undefined;
  let upstream: Response;
  try {
    upstream = await backend.forward(request);
  } catch (error) {
    release?.();
    throw error;
  }
  // The backend's credential is the operator's, not the client's: 401/403 from it are a proxy fault.
  if (upstream.status >= 500 || upstream.status === 401 || upstream.status === 403) {
    const body = await upstream.text().finally(() => release?.());
    throw toProxyHttpError(new BackendError(upstream.status, body));
  }
  if (!release) return upstream;
  // Under --serialize a streamed answer holds the slot until it has been sent; others are read already.
  if (!upstream.headers.get("content-type")?.startsWith("text/event-stream") || !upstream.body) {
    release();
    return upstream;
  }
  return new Response(releaseWhenDone(upstream.body, release, request.signal), {
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
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      flush: () => {
        signal?.removeEventListener("abort", release);
        release();
      },
    }),
  );
}
