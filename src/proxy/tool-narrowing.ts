/**
 * Tool-set narrowing on the proxy's guarded path (ADR 028, `--narrow-tools K`): a request with more
 * than K tools goes upstream with the K most relevant (`narrowTools`), the always-offered ones, a
 * tool the client forces and the proxy's `respond`. Only what is sent changes: the loop still
 * validates calls against the request's whole tool set, so a call to a tool left out is accepted.
 */
import type { ToolSpec } from "../core/tools.ts";
import type { LLMClient, LLMResponse, SendOptions, StreamChunk } from "../core/types.ts";
import { narrowTools, type ToolNarrowingRules } from "../guardrails/tool-narrowing.ts";
import { RESPOND_TOOL_NAME } from "../tools/respond.ts";
import type { ProxyRequest } from "./proxy-request.ts";
import type { RequestStats } from "./request-stats.ts";

/**
 * `client` sending only the tools narrowing keeps for `request` (counted in `stats.narrowed`);
 * `client` itself when `rules` is absent or the request has few enough tools.
 */
export function withToolNarrowing(
  client: LLMClient,
  request: ProxyRequest,
  rules: ToolNarrowingRules | undefined,
  stats: RequestStats,
): LLMClient {
  if (rules === undefined) return client;
  const forced = forcedToolName(request.extraBody.tool_choice);
  const pinned = [RESPOND_TOOL_NAME, ...(forced ? [forced] : [])];
  const narrowed = narrowTools(request.tools, request.messages, rules, pinned);
  if (narrowed === null) return client;
  stats.narrowed = { total: narrowed.total, offered: narrowed.offered.length };
  const offered = new Set([...narrowed.offered, RESPOND_TOOL_NAME]);
  return new NarrowedToolsClient(client, (name) => offered.has(name));
}

/**
 * `client` sending every tool but the proxy's `respond` (ADR 042, `respondUpstream: false`): where
 * the model may answer in text and the prose policy takes a text answer, `respond` only lengthens
 * the prompt. The loop still accepts a `respond` call, as any call to a tool left out.
 */
export function withoutRespondUpstream(client: LLMClient): LLMClient {
  return new NarrowedToolsClient(client, (name) => name !== RESPOND_TOOL_NAME);
}

/** The tool a client's `tool_choice` forces, in the OpenAI, Responses or Anthropic spelling; undefined if none. */
export function forcedToolName(choice: unknown): string | undefined {
  if (typeof choice !== "object" || choice === null) return undefined;
  const { name, function: fn } = choice as { name?: unknown; function?: { name?: unknown } };
  if (typeof fn?.name === "string") return fn.name;
  return typeof name === "string" ? name : undefined;
}

/** Sends only the tools of each call's tool list that `offered` keeps. */
class NarrowedToolsClient implements LLMClient {
  readonly apiFormat: LLMClient["apiFormat"];
  readonly #inner: LLMClient;
  readonly #offered: (name: string) => boolean;

  constructor(inner: LLMClient, offered: (name: string) => boolean) {
    this.apiFormat = inner.apiFormat;
    this.#inner = inner;
    this.#offered = offered;
  }

  send(messages: Record<string, unknown>[], tools?: ToolSpec[], options?: SendOptions): Promise<LLMResponse> {
    return this.#inner.send(messages, this.#narrow(tools), options);
  }

  sendStream(
    messages: Record<string, unknown>[],
    tools?: ToolSpec[],
    options?: SendOptions,
  ): AsyncIterable<StreamChunk> {
    return this.#inner.sendStream(messages, this.#narrow(tools), options);
  }

  getContextLength(): Promise<number | null> {
    return this.#inner.getContextLength();
  }

  #narrow(tools: ToolSpec[] | undefined): ToolSpec[] | undefined {
    return tools?.filter((tool) => this.#offered(tool.name));
  }
}
