/**
 * The `LLMClient` the proxy sends each guarded request through to an OpenAI-compatible backend.
 * It is the client's own request body with the history and tools replaced, so sampling
 * parameters and unknown fields reach the backend untouched. It goes over the proxy's own
 * transport (`BackendTransport`: one keep-alive pool, 502/504 mapping), and the answer is
 * read by `src/clients`' wire code (shared, not copied): native calls, llama-server's tool-call
 * parse failures, prompt-mode extraction and the auto fallback between the two.
 */

import {
  errorMessageOf,
  rejectsNativeTools,
  responseFromParseFailure,
  toolParseFailureOutput,
} from "../clients/llama-server-errors.ts";
import {
  chatCompletionSchema,
  isChatCompletion,
  messageOfCompletion,
  readMessage,
} from "../clients/openai-wire.ts";
import { toPromptModeMessages } from "../clients/prompt-mode.ts";
import { parseWireBody } from "../clients/wire.ts";
import { BackendError } from "../core/errors.ts";
import { type ToolSpec, toOpenAITool } from "../core/tools.ts";
import {
  ChunkType,
  type LLMClient,
  type LLMResponse,
  type SendOptions,
  type StreamChunk,
} from "../core/types.ts";
import type { ForwardRequest } from "./backend.ts";
import { parseRetryAfter } from "./errors.ts";
import type { BufferedAnswer } from "./transport.ts";

/** Path of the chat endpoint on an OpenAI-compatible server root. */
export const CHAT_PATH = "/v1/chat/completions";

/** How tools reach the model: the server's function calling, the system prompt, or native first. */
export type ProxyToolMode = "native" | "prompt" | "auto";

/** Backend-wide state the per-request clients share: the URL, credential and the resolved tool mode. */
export class ForwardingTarget {
  readonly exchange: (request: ForwardRequest) => Promise<BufferedAnswer>;
  /** For messages: where requests go. */
  readonly url: string;
  readonly #mode: ProxyToolMode;
  #resolved: "native" | "prompt" | undefined;
  readonly #logger: (line: string) => void;

  constructor(options: {
    exchange: (request: ForwardRequest) => Promise<BufferedAnswer>;
    url: string;
    mode?: ProxyToolMode;
    logger?: (line: string) => void;
  }) {
    this.exchange = options.exchange;
    this.url = options.url;
    this.#mode = options.mode ?? "auto";
    this.#resolved = this.#mode === "auto" ? undefined : this.#mode;
    this.#logger = options.logger ?? ((line) => console.info(line));
  }

  /** The mode to try: the resolved one, or native while `auto` is undecided. */
  get mode(): "native" | "prompt" {
    return this.#resolved ?? "native";
  }

  /** True while `auto` has not yet seen the server accept or reject native tools. */
  get deciding(): boolean {
    return this.#resolved === undefined;
  }

  settle(mode: "native" | "prompt", reason?: string): void {
    if (this.#resolved !== undefined) return;
    this.#resolved = mode;
    if (reason) this.#logger(`forge proxy: ${reason}; using prompt-injected tool calling from now on.`);
  }
}

/** One request's client: its model and forwarded fields over the shared target. */
export class ForwardingChatClient implements LLMClient {
  readonly apiFormat = "openai" as const;
  readonly #target: ForwardingTarget;
  readonly #model: string | undefined;
  readonly #extraBody: Record<string, unknown>;

  constructor(target: ForwardingTarget, model: string | undefined, extraBody: Record<string, unknown>) {
    this.#target = target;
    this.#model = model;
    this.#extraBody = extraBody;
  }

  async send(
    messages: Record<string, unknown>[],
    tools: ToolSpec[] = [],
    options: SendOptions = {},
  ): Promise<LLMResponse> {
    const target = this.#target;
    const mode = tools.length > 0 ? target.mode : "native";
    const answer = await target.exchange({
      method: "POST",
      path: CHAT_PATH,
      body: JSON.stringify(this.#body(messages, tools, mode)),
      ...(options.signal && { signal: options.signal }),
    });
    const body = answer.body.toString("utf8");
    const toolNames = tools.map((tool) => tool.name);
    if (answer.status < 200 || answer.status >= 300) {
      if (tools.length > 0 && target.deciding && rejectsNativeTools(answer.status, body)) {
        target.settle(
          "prompt",
          `${target.url} rejected native tool calling (HTTP ${answer.status}: ${errorMessageOf(body).slice(0, 200)})`,
        );
        return this.send(messages, tools, options);
      }
      const output = toolParseFailureOutput(answer.status, body);
      if (output === null) {
        throw new BackendError(answer.status, body, undefined, {
          retryAfterSeconds: parseRetryAfter(answer.retryAfter),
        });
      }
      return responseFromParseFailure(output, toolNames, undefined);
    }
    if (tools.length > 0) target.settle(mode);
    const completion = parseWireBody(chatCompletionSchema, body, target.url, isChatCompletion);
    return readMessage(messageOfCompletion(completion), { mode, toolNames, think: undefined });
  }

  /** The proxy validates whole answers, so a "stream" is the answer in one FINAL chunk. */
  async *sendStream(
    messages: Record<string, unknown>[],
    tools?: ToolSpec[],
    options?: SendOptions,
  ): AsyncIterable<StreamChunk> {
    yield { type: ChunkType.FINAL, response: await this.send(messages, tools, options) };
  }

  async getContextLength(): Promise<number | null> {
    return null;
  }

  #body(
    messages: Record<string, unknown>[],
    tools: ToolSpec[],
    mode: "native" | "prompt",
  ): Record<string, unknown> {
    const native = mode === "native" && tools.length > 0;
    const body: Record<string, unknown> = { ...this.#extraBody };
    if (this.#model !== undefined) body.model = this.#model;
    body.messages = mode === "prompt" && tools.length > 0 ? toPromptModeMessages(messages, tools) : messages;
    if (native) body.tools = tools.map(toOpenAITool);
    else delete body.tool_choice;
    body.stream = false;
    return body;
  }
}

/** `http://host:8080` and `http://host:8080/v1` both name the same OpenAI-compatible server. */
export function withV1(baseUrl: string): string {
  const trimmed = baseUrl.replace(/\/+$/, "");
  return trimmed.endsWith("/v1") ? trimmed : `${trimmed}/v1`;
}

/** The server root, without a trailing `/v1`. */
export function withoutV1(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "");
}
