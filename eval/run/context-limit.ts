/**
 * Context limits in the backend's real tokens. A run's ContextManager budget is capped at what
 * the backend's context window (llama-server's `/props` n_ctx, as the clients'
 * `getContextLength` reads it) leaves once the tools list and a reply are paid for, all counted
 * with the model's own chat template and tokenizer (`POST /apply-template`, `POST /tokenize`).
 * A request whose prompt would not fit ends the run with a typed `ContextBudgetExceeded`,
 * reported as the failure kind `context_exceeded` rather than as a backend error.
 */
import { z } from "zod";
import { authHeaders, joinUrl, openExchange } from "../../src/clients/http.ts";
import { BackendError, ContextBudgetExceeded } from "../../src/core/errors.ts";
import { type ToolSpec, toOpenAITool } from "../../src/core/tools.ts";
import type { LLMClient, LLMResponse, SendOptions, StreamChunk } from "../../src/core/types.ts";
import { renderSystemPrompt, type Workflow } from "../../src/core/workflow.ts";

/** Tokens kept free for the model's reply: a prompt may use the window less this. */
export const REPLY_RESERVE_TOKENS = 128;

/** The failure kind of a run whose prompt outgrew the backend's context window. */
export const CONTEXT_EXCEEDED = "context_exceeded";

/** Counts prompts with the backend's own chat template and tokenizer. */
export interface PromptTokenizer {
  /** The backend's context window in tokens; null when it does not say (then nothing is capped). */
  contextLength(): Promise<number | null>;
  /** Tokens of the prompt these wire messages and tools make. */
  countPrompt(messages: readonly Record<string, unknown>[], tools: readonly ToolSpec[]): Promise<number>;
  /** Tokens of a bare text. */
  countText(text: string): Promise<number>;
}

/** Options of {@link createLlamaServerTokenizer}. */
export interface LlamaServerTokenizerOptions {
  /** The server's URL, with or without `/v1`. */
  baseUrl: string;
  apiKey?: string;
  /** The context window, e.g. an OpenAICompatibleClient's `getContextLength` (read once). */
  contextLength: () => Promise<number | null>;
  timeoutMs?: number;
}

const templateSchema = z.object({ prompt: z.string() });
const tokensSchema = z.object({ tokens: z.array(z.unknown()) });

/**
 * A {@link PromptTokenizer} for llama-server: the prompt is rendered by `POST /apply-template`
 * (tools included) and counted by `POST /tokenize`. A server without `/apply-template` has the
 * JSON of the messages and tools counted instead.
 */
export function createLlamaServerTokenizer(options: LlamaServerTokenizerOptions): PromptTokenizer {
  const root = options.baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "");
  const headers = authHeaders(options.apiKey);
  const post = async (path: string, body: unknown): Promise<{ status: number; json: unknown }> => {
    const exchange = await openExchange({
      method: "POST",
      url: joinUrl(root, path),
      json: body,
      ...(headers && { headers }),
      timeoutMs: options.timeoutMs ?? 60_000,
    });
    const text = await exchange.text();
    if (exchange.status === 404) return { status: 404, json: null };
    if (!exchange.ok) throw new BackendError(exchange.status, text);
    return { status: exchange.status, json: JSON.parse(text) };
  };
  const countText = async (text: string): Promise<number> => {
    const { json } = await post("tokenize", { content: text, add_special: true, parse_special: true });
    return tokensSchema.parse(json).tokens.length;
  };
  let contextLength: Promise<number | null> | undefined;
  return {
    contextLength: () => {
      contextLength ??= options.contextLength();
      return contextLength;
    },
    countText,
    async countPrompt(messages, tools) {
      const rendered = await post("apply-template", {
        messages,
        ...(tools.length > 0 && { tools: tools.map(toOpenAITool) }),
      });
      if (rendered.status === 404)
        return countText(JSON.stringify({ messages, tools: tools.map(toOpenAITool) }));
      return countText(templateSchema.parse(rendered.json).prompt);
    },
  };
}

/** One run's limits, in the backend's tokens. */
export interface RunContextLimit {
  /** The backend's context window. */
  contextTokens: number;
  /** The most tokens one request's prompt may have: the window less {@link REPLY_RESERVE_TOKENS}. */
  promptLimit: number;
  /** What the workflow's tools list costs in the rendered prompt. */
  toolTokens: number;
  /** The ContextManager's budget: the scenario's, capped at the prompt limit less the tools. */
  budgetTokens: number;
  /** Characters per token of this model on the run's own text, for `charRatioEstimator`. */
  charsPerToken: number;
}

/**
 * The limits of one run of `workflow` on `userMessage`, or null when the backend does not say
 * how large its context is.
 */
export async function resolveRunLimit(
  tokenizer: PromptTokenizer,
  workflow: Workflow,
  userMessage: string,
  scenarioBudget: number,
): Promise<RunContextLimit | null> {
  const contextTokens = await tokenizer.contextLength();
  if (contextTokens === null) return null;
  const system = renderSystemPrompt(workflow.systemPrompt);
  const start = [
    { role: "system", content: system },
    { role: "user", content: userMessage },
  ];
  const tools = Object.values(workflow.tools).map((tool) => tool.spec);
  const [withTools, withoutTools, textTokens] = await Promise.all([
    tokenizer.countPrompt(start, tools),
    tokenizer.countPrompt(start, []),
    tokenizer.countText(`${system}\n${userMessage}`),
  ]);
  const promptLimit = contextTokens - REPLY_RESERVE_TOKENS;
  const toolTokens = Math.max(0, withTools - withoutTools);
  return {
    contextTokens,
    promptLimit,
    toolTokens,
    // A window too small for even the tools leaves a budget of 1: the first request then fails typed.
    budgetTokens: Math.max(1, Math.min(scenarioBudget, promptLimit - toolTokens)),
    charsPerToken: (system.length + 1 + userMessage.length) / Math.max(1, textTokens),
  };
}

/**
 * Counts every request's prompt before sending it and throws `ContextBudgetExceeded` (real
 * tokens, the prompt limit) instead of sending one that would not fit; otherwise unchanged.
 */
export class ContextLimitedClient implements LLMClient {
  readonly #inner: LLMClient;
  readonly #tokenizer: PromptTokenizer;
  readonly #promptLimit: number;
  /** Real prompt tokens of each request, in order. */
  readonly promptTokens: number[] = [];

  constructor(inner: LLMClient, tokenizer: PromptTokenizer, promptLimit: number) {
    this.#inner = inner;
    this.#tokenizer = tokenizer;
    this.#promptLimit = promptLimit;
  }

  get apiFormat() {
    return this.#inner.apiFormat;
  }

  async send(
    messages: Record<string, unknown>[],
    tools?: ToolSpec[],
    options?: SendOptions,
  ): Promise<LLMResponse> {
    await this.#check(messages, tools);
    return this.#inner.send(messages, tools, options);
  }

  async *sendStream(
    messages: Record<string, unknown>[],
    tools?: ToolSpec[],
    options?: SendOptions,
  ): AsyncIterable<StreamChunk> {
    await this.#check(messages, tools);
    yield* this.#inner.sendStream(messages, tools, options);
  }

  getContextLength(): Promise<number | null> {
    return this.#inner.getContextLength();
  }

  async #check(messages: Record<string, unknown>[], tools: ToolSpec[] | undefined): Promise<void> {
    const tokens = await this.#tokenizer.countPrompt(messages, tools ?? []);
    this.promptTokens.push(tokens);
    if (tokens > this.#promptLimit) throw new ContextBudgetExceeded(tokens, this.#promptLimit);
  }
}

/**
 * Whether an error says the prompt did not fit the context: this harness's
 * `ContextBudgetExceeded`, or llama-server's `exceed_context_size_error` (HTTP 400), which the
 * AI SDK peer meets since nothing counts its prompts.
 */
export function isContextOverflow(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const { name, message, body, responseBody } = error as Record<string, unknown>;
  if (name === ContextBudgetExceeded.name) return true;
  return [message, body, responseBody].some(
    (text) =>
      typeof text === "string" && /exceed_context_size_error|exceeds the available context size/i.test(text),
  );
}
