/**
 * Proxy faults as HTTP answers: one error class carrying status, kind and the offending field,
 * rendered in the body shape each API's clients parse.
 */
import type { z } from "zod";
import {
  BackendError,
  ContextBudgetExceeded,
  ForgeError,
  ToolCallError,
  WorkflowCancelledError,
} from "../core/errors.ts";

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
  /** The prompt does not fit the model's context, even after compaction. */
  CONTEXT_LENGTH_EXCEEDED: "context_length_exceeded",
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
  /** For `context_length_exceeded`: the prompt's tokens and the most it may have, when known. */
  readonly contextOverflow: ContextOverflow | undefined;
  /**
   * Sent as `x-should-retry`, which the openai and Anthropic SDKs obey over their own rule (they
   * retry 408, 409, 429 and 5xx); undefined: not sent.
   */
  readonly shouldRetry: boolean | undefined;

  constructor(
    status: number,
    kind: ProxyErrorKind,
    message: string,
    options: {
      param?: string | null;
      details?: Record<string, unknown>;
      cause?: unknown;
      retryAfterSeconds?: number;
      contextOverflow?: ContextOverflow;
      shouldRetry?: boolean;
    } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = status;
    this.kind = kind;
    this.param = options.param ?? null;
    this.details = options.details ?? {};
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.contextOverflow = options.contextOverflow;
    this.shouldRetry = options.shouldRetry;
  }
}

/** A proxy option that cannot work as given: a value out of range, or a feature the backend cannot serve. */
export class ProxyConfigError extends ForgeError {}

/** How far a prompt is over the context: its tokens and the most it may have. */
export interface ContextOverflow {
  promptTokens: number;
  maxTokens: number;
}

/**
 * The 400 for a prompt that does not fit, in the shape clients handle: OpenAI's
 * `context_length_exceeded` (param `messages`), Anthropic's "prompt is too long: N tokens > M maximum".
 */
export function contextLengthExceeded(
  overflow: ContextOverflow | undefined,
  cause?: unknown,
): ProxyHttpError {
  const message = overflow
    ? `This model's maximum context length is ${overflow.maxTokens} tokens. However, your messages resulted in ${overflow.promptTokens} tokens, even after compaction. Please reduce the length of the messages or tools.`
    : "The messages do not fit the model's context length, even after compaction. Please reduce the length of the messages or tools.";
  return new ProxyHttpError(400, ProxyErrorKind.CONTEXT_LENGTH_EXCEEDED, message, {
    param: "messages",
    ...(overflow && { contextOverflow: overflow }),
    ...(cause !== undefined && { cause }),
  });
}

/**
 * A 400 for a value that failed its zod schema, naming the first offending field: in the body, or
 * inside the part of it at `within` (`input[2]` + `call_id` → `input[2].call_id`).
 */
export function invalidRequestFromZod(error: z.ZodError, within?: string): ProxyHttpError {
  const issue = error.issues[0];
  const path = issue ? formatPath(issue.path) : "";
  const param =
    within === undefined
      ? path
      : path.length === 0
        ? within
        : path.startsWith("[")
          ? within + path
          : `${within}.${path}`;
  if (param.length === 0) {
    return new ProxyHttpError(400, ProxyErrorKind.INVALID_REQUEST, issue?.message ?? "invalid body", {
      param: null,
    });
  }
  return invalidField(param, issue?.message ?? "invalid value");
}

/** The 400 for a field the proxy cannot take, `param` naming it and opening the message. */
export function invalidField(param: string, message: string): ProxyHttpError {
  return new ProxyHttpError(400, ProxyErrorKind.INVALID_REQUEST, `${param}: ${message}`, { param });
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
 * The status of `retries_exhausted`: 422, which the SDKs do not retry. The proxy already made
 * `--max-retries + 1` calls; an SDK retrying a 5xx would multiply them (one turn of an agent became
 * 24 backend calls), and the same request meets the same model.
 */
export const RETRIES_EXHAUSTED_STATUS = 422;

/**
 * Map anything thrown while serving a request to a `ProxyHttpError`: backend HTTP errors keep
 * their 4xx status (408 becomes 504), unreachable backends are 502, exhausted retries are 422
 * (not retried by the SDKs) with the model's last raw output.
 */
export function toProxyHttpError(error: unknown): ProxyHttpError {
  if (error instanceof ProxyHttpError) return error;
  if (error instanceof ToolCallError) {
    return new ProxyHttpError(
      RETRIES_EXHAUSTED_STATUS,
      ProxyErrorKind.RETRIES_EXHAUSTED,
      `The model did not produce a valid tool call: ${error.message}`,
      { details: { raw_response: error.rawResponse }, cause: error, shouldRetry: false },
    );
  }
  if (error instanceof ContextBudgetExceeded) {
    return contextLengthExceeded(
      { promptTokens: error.estimatedTokens, maxTokens: error.budgetTokens },
      error,
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
  const overflow = contextOverflowOf(error);
  if (overflow !== null) return contextLengthExceeded(overflow ?? undefined, error);
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

/**
 * Whether a backend error says the prompt did not fit: llama-server's `exceed_context_size_error`
 * (with `n_prompt_tokens` and `n_ctx`), or an OpenAI-style `context_length_exceeded` code.
 * Returns the overflow (undefined when the numbers are not given), or null for any other error.
 */
function contextOverflowOf(error: BackendError): ContextOverflow | undefined | null {
  if (error.statusCode !== 400 || !error.body.includes("context")) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(error.body);
  } catch {
    return null;
  }
  const inner = (parsed as { error?: unknown }).error;
  if (typeof inner !== "object" || inner === null) return null;
  const { type, code, n_prompt_tokens: promptTokens, n_ctx: maxTokens } = inner as Record<string, unknown>;
  if (type !== "exceed_context_size_error" && code !== "context_length_exceeded") return null;
  return typeof promptTokens === "number" && typeof maxTokens === "number"
    ? { promptTokens, maxTokens }
    : undefined;
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
  context_length_exceeded: "invalid_request_error",
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
  context_length_exceeded: "invalid_request_error",
  internal: "api_error",
};

/**
 * The JSON error body for an API: OpenAI `{ error: { message, type, param, code } }`,
 * Anthropic `{ type: "error", error: { type, message } }`.
 */
export function errorBody(api: ProxyApi, error: ProxyHttpError): Record<string, unknown> {
  if (api === "anthropic") {
    const overflow = error.contextOverflow;
    // Anthropic's own wording, which clients parse for the two numbers.
    const message = overflow
      ? `prompt is too long: ${overflow.promptTokens} tokens > ${overflow.maxTokens} maximum`
      : error.message;
    return {
      type: "error",
      error: { type: ANTHROPIC_TYPES[error.kind], message, ...error.details },
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
