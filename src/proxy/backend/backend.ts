/**
 * What the proxy needs from a model server: an `LLMClient` per request for the guardrail path,
 * and raw HTTP forwarding for the routes it passes through (`/v1/models`, `/props`, tool-less chat).
 */
import type { PromptTokenizer } from "../../clients/llama-server/tokenizer.ts";
import type { LLMClient } from "../../core/types.ts";

/** Wire format of a backend. */
export type BackendFormat = "openai" | "ollama" | "anthropic";

/** The per-request part of a backend call. */
export interface BackendCall {
  /** The model the client asked for; forwarded as-is. */
  model: string | undefined;
  /** Request fields forwarded untouched: sampling parameters, tool_choice, unknown fields. */
  extraBody: Record<string, unknown>;
}

/** A raw request forwarded to the backend. The client's headers are never copied. */
export interface ForwardRequest {
  method: "GET" | "POST";
  /** Path and query on the backend, e.g. `/v1/models`. */
  path: string;
  /** JSON body, sent as-is. */
  body?: string;
  signal?: AbortSignal;
}

/** What `/forge/health` reports about the backend. */
export interface BackendHealth {
  /** `ok`: it answered; `unreachable`: no connection; `error`: it answered with an error status. */
  status: "ok" | "unreachable" | "error";
  url: string;
  format: BackendFormat;
  /** The backend's HTTP status, when it answered. */
  httpStatus?: number;
  /** Extra state (for a managed backend: the server manager's state). */
  detail?: Record<string, unknown>;
}

/** A model server as the proxy sees it. */
export interface ProxyBackend {
  readonly format: BackendFormat;
  /** Base URL, for logs and health. */
  readonly url: string;
  /** A client for one request, bound to its model and forwarded fields. Must be cheap. */
  client(call: BackendCall): LLMClient;
  /**
   * Forward a raw request and return the backend's response (its body may be a stream).
   * Throws `ProxyHttpError` 502 when unreachable and 504 on timeout.
   */
  forward(request: ForwardRequest): Promise<Response>;
  /** The model's context length in tokens, when the backend reports it (used as compaction budget). */
  contextLength(): Promise<number | null>;
  /**
   * Exact prompt counts with the backend's own template and tokenizer (llama-server), used to
   * decide on compaction and to refuse a prompt that does not fit; absent: estimates only.
   */
  tokenizer?(): PromptTokenizer | undefined;
  /**
   * The Jinja chat template the backend formats prompts with (llama-server's `/props`), from which
   * `callFormatFromTemplate` reads how its model writes a call; `null` when it reports none, absent
   * when the backend cannot tell.
   */
  chatTemplate?(): Promise<string | null>;
  health(): Promise<BackendHealth>;
  /** Release what the backend holds (a managed server process). */
  close?(): Promise<void>;
}
