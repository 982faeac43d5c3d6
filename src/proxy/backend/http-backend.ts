/**
 * An external backend reached over HTTP (`--backend-url`): raw forwarding with a header timeout,
 * the backend's own credential (never the client's), and an `LLMClient` factory for the
 * guardrail path.
 */

import { fetchServerProps } from "../../clients/llama-server/props.ts";
import { createLlamaServerTokenizer } from "../../clients/llama-server/tokenizer.ts";
import { OpenAICompatibleClient } from "../../clients/openai/compatible-client.ts";
import { ContextDiscoveryError } from "../../core/errors.ts";
import type { LLMClient } from "../../core/types.ts";
import type { BackendCall, BackendFormat, BackendHealth, ForwardRequest, ProxyBackend } from "./backend.ts";
import { anthropicClientFactory, ollamaClientFactory } from "./client-factories.ts";
import {
  CHAT_PATH,
  ForwardingChatClient,
  ForwardingTarget,
  type ProxyToolMode,
  withoutV1,
  withV1,
} from "./forwarding-client.ts";
import { StreamedChatAnswer } from "./streamed-answer.ts";
import { BackendTransport, DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_RESPONSE_BYTES } from "./transport.ts";

/** Settings an `LLMClient` factory receives with each call. */
export interface BackendClientConfig {
  baseUrl: string;
  format: BackendFormat;
  /** Credential for the backend (sent as Bearer, or `x-api-key` for Anthropic-shaped backends). */
  apiKey: string | undefined;
  /** Per-request timeout in milliseconds. */
  timeoutMs: number;
}

/** Builds the client of one request. */
export type BackendClientFactory = (call: BackendCall, config: BackendClientConfig) => LLMClient;

/** Options of `createHttpBackend`. */
export interface HttpBackendOptions {
  url: string;
  format?: BackendFormat;
  apiKey?: string;
  /** Milliseconds the backend may stay silent before a request fails with 504 (default 600 000). */
  timeoutMs?: number;
  /**
   * Longest silence between two reads of an answer's body, once its headers came (default 300 000;
   * 0: none). A stalled body fails with 504; a stalled forwarded stream ends with an error event.
   */
  idleTimeoutMs?: number;
  /** Largest backend answer in bytes (default 32 MiB); a larger one is dropped with 502. */
  maxResponseBytes?: number;
  /** How tools reach an OpenAI-compatible backend (default `auto`: native, prompt if it refuses). */
  toolMode?: ProxyToolMode;
  /** Model for requests that name none (Ollama and Anthropic backends need one). */
  defaultModel?: string;
  /**
   * Builds each request's client. Default: a `ForwardingChatClient` for `openai`, `OllamaClient`
   * and `AnthropicClient` (sampling fields mapped) for `ollama` and `anthropic`.
   */
  createClient?: BackendClientFactory;
  /** State merged into `/forge/health`'s backend detail (managed mode adds the server's). */
  detail?: () => Record<string, unknown>;
  close?: () => Promise<void>;
}

/** How long one backend exchange may take, in milliseconds, unless `timeoutMs` says otherwise (10 minutes). */
export const DEFAULT_BACKEND_TIMEOUT_MS = 600_000;

/** An HTTP backend for the proxy. */
export function createHttpBackend(options: HttpBackendOptions): ProxyBackend {
  const format = options.format ?? "openai";
  // OpenAI-compatible servers are often given as `…/v1`; forwarded paths carry their own `/v1`.
  const url = format === "ollama" ? options.url.replace(/\/+$/, "") : withoutV1(options.url);
  const config: BackendClientConfig = {
    baseUrl: url,
    format,
    apiKey: options.apiKey,
    timeoutMs: options.timeoutMs ?? DEFAULT_BACKEND_TIMEOUT_MS,
  };
  const headers: Record<string, string> = { "content-type": "application/json", accept: "*/*" };
  if (options.apiKey) {
    if (format === "anthropic") headers["x-api-key"] = options.apiKey;
    else headers.authorization = `Bearer ${options.apiKey}`;
  }
  if (format === "anthropic") headers["anthropic-version"] = "2023-06-01";

  const transport = new BackendTransport({
    baseUrl: url,
    headers,
    timeoutMs: config.timeoutMs,
    ...(options.idleTimeoutMs !== undefined && { idleTimeoutMs: options.idleTimeoutMs }),
    ...(options.maxResponseBytes !== undefined && { maxResponseBytes: options.maxResponseBytes }),
  });
  const forward = (request: ForwardRequest) => transport.forward(request);
  const createClient =
    options.createClient ??
    defaultClientFactory(transport, config, options.toolMode, options.defaultModel, {
      maxBytes: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
      idleTimeoutMs: options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
    });

  // OpenAI-compatible: try llama-server's /apply-template + /tokenize (a 404 turns it off).
  const tokenizer =
    format === "openai"
      ? createLlamaServerTokenizer({
          baseUrl: url,
          apiKey: options.apiKey,
          contextLength: () => backend.contextLength(),
          timeoutMs: Math.min(config.timeoutMs, 10_000),
        })
      : undefined;

  const backend: ProxyBackend = {
    format,
    url,
    client: (call) => createClient(call, config),
    forward,
    tokenizer: () => tokenizer,
    async chatTemplate() {
      if (format !== "openai") return null;
      try {
        const props = await fetchServerProps(url.replace(/\/v1\/?$/, ""), undefined, options.apiKey);
        return props.chatTemplate ?? null;
      } catch (error) {
        // Not a llama-server (no /props), or not up yet: no template to read.
        if (error instanceof ContextDiscoveryError) return null;
        throw error;
      }
    },
    async contextLength() {
      try {
        if (format === "openai" && !options.createClient) {
          return await new OpenAICompatibleClient({
            baseUrl: withV1(url),
            ...(options.apiKey && { apiKey: options.apiKey }),
            timeoutMs: Math.min(config.timeoutMs, 10_000),
            logger: () => {},
          }).getContextLength();
        }
        return await createClient({ model: undefined, extraBody: {} }, config).getContextLength();
      } catch {
        return null;
      }
    },
    async health(): Promise<BackendHealth> {
      const detail = options.detail?.();
      const base = { url, format, ...(detail && { detail }) };
      const paths = healthPaths(format);
      for (const path of paths) {
        try {
          const answer = await transport.exchange({ method: "GET", path }, Math.min(config.timeoutMs, 5_000));
          if (answer.status === 404 && path !== paths.at(-1)) continue;
          const ok = answer.status >= 200 && answer.status < 300;
          return { ...base, status: ok ? "ok" : "error", httpStatus: answer.status };
        } catch {
          return { ...base, status: "unreachable" };
        }
      }
      return { ...base, status: "unreachable" };
    },
    async close() {
      transport.close();
      await options.close?.();
    },
  };
  return backend;
}

function defaultClientFactory(
  transport: BackendTransport,
  config: BackendClientConfig,
  toolMode: ProxyToolMode | undefined,
  defaultModel: string | undefined,
  limits: { maxBytes: number; idleTimeoutMs: number },
): BackendClientFactory {
  if (config.format === "ollama") return ollamaClientFactory(defaultModel);
  if (config.format === "anthropic") return anthropicClientFactory(defaultModel);
  const target = new ForwardingTarget({
    exchange: (request) => transport.exchange(request),
    open: async (request) => new StreamedChatAnswer(await transport.open(request), limits),
    url: `${config.baseUrl}${CHAT_PATH}`,
    ...(toolMode && { mode: toolMode }),
  });
  return (call) => new ForwardingChatClient(target, call.model ?? defaultModel, call.extraBody);
}

function healthPaths(format: BackendFormat): string[] {
  if (format === "ollama") return ["/api/version"];
  if (format === "anthropic") return ["/v1/models"];
  return ["/health", "/v1/models"];
}
