/**
 * Proxy faults as HTTP answers: one error class carrying status, kind and the offending field,
 * rendered in the body shape each API's clients parse.
 */
import type { z } from "zod";
import { BackendError, ForgeError, ToolCallError, WorkflowCancelledError } from "../core/errors.ts";

export { parseRetryAfter } from "../core/errors.ts";

/** Which API a route speaks; decides the error body shape. */
export type ProxyApi = "openai" | "anthropic";

/** What went wrong, in words both APIs can map to their own error types. */
export const ProxyErrorKind = {
  INVALID_REQUEST: "invalid_request",
  AUTHENTICATION: "authentication",
  FORBIDDEN: "forbidden",
  NOT_FOUND: "not_found",
  TOO_LARGE: "request_too_large",
  BACKEND_UNREACHABLE: "backend_unreachable",
  BACKEND_TIMEOUT: "backend_timeout",
  BACKEND_ERROR: "backend_error",
  RETRIES_EXHAUSTED: "retries_exhausted",
  CLIENT_CLOSED: "client_closed",
  OVERLOADED: "overloaded",
  INTERNAL: "internal",
} as const;
export type ProxyErrorKind = (typeof ProxyErrorKind)[keyof typeof ProxyErrorKind];

/** A failed proxy request: the HTTP status, its kind, the field at fault and extra body fields. */
export class ProxyHttpError extends ForgeError {
  readonly status: number;
  readonly kind: ProxyErrorKind;
  readonly param: string | null;
  /** Extra fields of the error object (for example the model's last raw output). */
  readonly details: Record<string, unknown>;
  /** Seconds after which the client may try again, sent as `Retry-After`. */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    status: number,
    kind: ProxyErrorKind,
    message: string,
    options: {
      param?: string | null;
      details?: Record<string, unknown>;
      cause?: unknown;
      retryAfterSeconds?: number;
    } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = status;
    this.kind = kind;
    this.param = options.param ?? null;
    this.details = options.details ?? {};
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/** A 400 for a request body that failed its zod schema, naming the first offending field. */
export function invalidRequestFromZod(error: z.ZodError): ProxyHttpError {
  const issue = error.issues[0];
  const param = issue ? formatPath(issue.path) : null;
  const where = param ? `${param}: ` : "";
  return new ProxyHttpError(
    400,
    ProxyErrorKind.INVALID_REQUEST,
    `${where}${issue?.message ?? "invalid body"}`,
    {
      param,
    },
  );
}

/** `["messages", 0, "role"]` → `messages[0].role`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else out += out.length === 0 ? String(key) : `.${String(key)}`;
  }
  return out;
}

/**
 * Map anything thrown while serving a request to a `ProxyHttpError`: backend HTTP errors keep
 * their 4xx status (408 becomes 504), unreachable backends are 502, exhausted retries are 502
 * with the model's last raw output.
 */
export function toProxyHttpError(error: unknown): ProxyHttpError {
  if (error instanceof ProxyHttpError) return error;
  if (error instanceof ToolCallError) {
    return new ProxyHttpError(
      502,
      ProxyErrorKind.RETRIES_EXHAUSTED,
      `The model did not produce a valid tool call: ${error.message}`,
      { details: { raw_response: error.rawResponse }, cause: error },
    );
  }
  if (error instanceof WorkflowCancelledError) {
    return new ProxyHttpError(499, ProxyErrorKind.CLIENT_CLOSED, "Client closed the request", {
      cause: error,
    });
  }
  if (error instanceof BackendError) return fromBackendError(error);
  if (isConnectionError(error)) {
    return new ProxyHttpError(
      502,
      ProxyErrorKind.BACKEND_UNREACHABLE,
      `Backend unreachable: ${describe(error)}`,
      {
        cause: error,
      },
    );
  }
  if (isTimeoutError(error)) {
    return new ProxyHttpError(504, ProxyErrorKind.BACKEND_TIMEOUT, "Backend did not answer in time", {
      cause: error,
    });
  }
  return new ProxyHttpError(500, ProxyErrorKind.INTERNAL, `Proxy error: ${describe(error)}`, {
    cause: error,
  });
}

function fromBackendError(error: BackendError): ProxyHttpError {
  const { statusCode } = error;
  if (statusCode === 408) {
    return new ProxyHttpError(504, ProxyErrorKind.BACKEND_TIMEOUT, "Backend did not answer in time", {
      cause: error,
    });
  }
  // src/clients reports a server it cannot reach as 503 with the transport error as cause.
  if (statusCode === 0 || (statusCode === 503 && error.cause !== undefined)) {
    return new ProxyHttpError(502, ProxyErrorKind.BACKEND_UNREACHABLE, error.message, { cause: error });
  }
  const retryAfter =
    error.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: error.retryAfterSeconds };
  if (statusCode === 401 || statusCode === 403) {
    // The backend's credential is the operator's, and its body may echo it: the proxy writes its own.
    return new ProxyHttpError(
      502,
      ProxyErrorKind.BACKEND_ERROR,
      `The backend refused the proxy's credential (HTTP ${statusCode}); the proxy's operator must check --backend-api-key`,
    );
  }
  if (statusCode >= 400 && statusCode < 500) {
    // The backend rejected what the client sent (context too long, bad parameter): the client's to fix.
    return new ProxyHttpError(statusCode, ProxyErrorKind.BACKEND_ERROR, backendMessage(error), {
      cause: error,
      ...retryAfter,
    });
  }
  // A backend crash is the proxy operator's, not the client's.
  return new ProxyHttpError(502, ProxyErrorKind.BACKEND_ERROR, backendMessage(error), {
    cause: error,
    ...retryAfter,
  });
}

function backendMessage(error: BackendError): string {
  try {
    const parsed = JSON.parse(error.body) as { error?: { message?: unknown } | string; message?: unknown };
    const inner = typeof parsed.error === "object" ? parsed.error?.message : parsed.error;
    const message = inner ?? parsed.message;
    if (typeof message === "string") return `Backend returned HTTP ${error.statusCode}: ${message}`;
  } catch {
    // Not JSON: fall through to the raw body.
  }
  return `Backend returned HTTP ${error.statusCode}: ${error.body.slice(0, 500)}`;
}

const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EPIPE",
  "EAI_AGAIN",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
]);

function isConnectionError(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && CONNECTION_CODES.has(code)) return true;
    if (current instanceof TypeError && current.message === "fetch failed" && !(current as Error).cause) {
      return true;
    }
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

function isTimeoutError(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    const name = (current as { name?: unknown }).name;
    const code = (current as { code?: unknown }).code;
    if (name === "TimeoutError" || code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT") {
      return true;
    }
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
    return `${error.message}${cause}`;
  }
  return String(error);
}

const OPENAI_TYPES: Record<ProxyErrorKind, string> = {
  invalid_request: "invalid_request_error",
  authentication: "authentication_error",
  forbidden: "permission_error",
  not_found: "not_found_error",
  request_too_large: "invalid_request_error",
  backend_unreachable: "server_error",
  backend_timeout: "server_error",
  backend_error: "server_error",
  retries_exhausted: "server_error",
  client_closed: "invalid_request_error",
  overloaded: "server_error",
  internal: "server_error",
};

const ANTHROPIC_TYPES: Record<ProxyErrorKind, string> = {
  invalid_request: "invalid_request_error",
  authentication: "authentication_error",
  forbidden: "permission_error",
  not_found: "not_found_error",
  request_too_large: "request_too_large",
  backend_unreachable: "api_error",
  backend_timeout: "timeout_error",
  backend_error: "api_error",
  retries_exhausted: "api_error",
  client_closed: "invalid_request_error",
  overloaded: "overloaded_error",
  internal: "api_error",
};

/**
 * The JSON error body for an API: OpenAI `{ error: { message, type, param, code } }`,
 * Anthropic `{ type: "error", error: { type, message } }`.
 */
export function errorBody(api: ProxyApi, error: ProxyHttpError): Record<string, unknown> {
  if (api === "anthropic") {
    return {
      type: "error",
      error: { type: ANTHROPIC_TYPES[error.kind], message: error.message, ...error.details },
    };
  }
  return {
    error: {
      message: error.message,
      type: OPENAI_TYPES[error.kind],
      param: error.param,
      code: error.kind,
      ...error.details,
    },
  };
}
