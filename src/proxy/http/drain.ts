/**
 * Draining the proxy on shutdown: once it begins, every request still waiting for a slot (the
 * `--serialize`, `--max-in-flight` and `--max-body-memory` lines) and every new request is
 * answered at once with 503 and `Retry-After`, in the shape of the API the client speaks, while
 * the requests already running may finish (up to the drain deadline of `startProxy`).
 */
import type { Context } from "hono";
import { ProxyErrorKind, ProxyHttpError } from "../errors.ts";

/** `Retry-After` of the answers refused while the proxy shuts down: 5 s, about a restart. */
export const SHUTDOWN_RETRY_AFTER_SECONDS = 5;

/** The 503 every waiting and new request gets once the proxy drains. */
export function shuttingDownError(retryAfterSeconds = SHUTDOWN_RETRY_AFTER_SECONDS): ProxyHttpError {
  return new ProxyHttpError(
    503,
    ProxyErrorKind.OVERLOADED,
    `The proxy is shutting down; retry after ${retryAfterSeconds} s`,
    { retryAfterSeconds },
  );
}

/** Something that stops admitting when the proxy drains (an `AdmissionGate`). */
export interface Drainable {
  close(refusal: () => ProxyHttpError): void;
}

/**
 * The drain switch of one proxy: `createProxy` registers its waiting lines, `startProxy.close()`
 * (or an embedder) calls `begin()`.
 * @example
 * const drain = new ProxyDrain();
 * const app = createProxy({ backend, drain });
 * // on SIGTERM:
 * drain.begin();
 */
export class ProxyDrain {
  readonly #lines: Drainable[] = [];
  readonly #retryAfterSeconds: number;
  readonly #expired = new AbortController();
  #draining = false;

  constructor(options: { retryAfterSeconds?: number } = {}) {
    this.#retryAfterSeconds = options.retryAfterSeconds ?? SHUTDOWN_RETRY_AFTER_SECONDS;
  }

  /** Whether `begin` was called. */
  get draining(): boolean {
    return this.#draining;
  }

  /** Close `line` when the drain begins (at once when it has). */
  register(line: Drainable): void {
    this.#lines.push(line);
    if (this.#draining) line.close(() => this.refusal());
  }

  /** Start draining: refuse every waiting request and every new one. Calling it again is harmless. */
  begin(): void {
    if (this.#draining) return;
    this.#draining = true;
    for (const line of this.#lines) line.close(() => this.refusal());
  }

  /**
   * Aborts, with a 503 (with `Retry-After`) as its reason, once `expire` is called: every request
   * still running follows it (see `RequestDeadline`) and is answered with that 503.
   */
  get expired(): AbortSignal {
    return this.#expired.signal;
  }

  /**
   * The drain deadline has passed: answer every request still running with a 503 (and
   * `Retry-After`) now, rather than cutting its connection. Begins the drain if it had not begun.
   */
  expire(): void {
    this.begin();
    if (this.#expired.signal.aborted) return;
    this.#expired.abort(
      new ProxyHttpError(
        503,
        ProxyErrorKind.OVERLOADED,
        `The proxy is shutting down and the request did not finish within the drain timeout; retry after ${this.#retryAfterSeconds} s`,
        { retryAfterSeconds: this.#retryAfterSeconds },
      ),
    );
  }

  /** The 503 (with `Retry-After`) a refused request gets. */
  refusal(): ProxyHttpError {
    return shuttingDownError(this.#retryAfterSeconds);
  }
}

/**
 * Middleware: while draining, answer every request with the 503 of `drain` (and ask the client to
 * close its connection), before it reads a body or waits for a slot.
 */
export function refuseWhileDraining(
  drain: ProxyDrain,
  errorResponse: (c: Context, error: ProxyHttpError) => Response,
) {
  return async (c: Context, next: () => Promise<void>) => {
    if (drain.draining) {
      c.header("connection", "close");
      return errorResponse(c, drain.refusal());
    }
    await next();
    // Refused while it waited: the connection is not to be reused either.
    if (drain.draining && !c.res.headers.has("connection")) c.header("connection", "close");
  };
}
