/**
 * Context limits in the backend's real tokens. A run's ContextManager budget is capped at what
 * the backend's context window (llama-server's `/props` n_ctx, as the clients'
 * `getContextLength` reads it) leaves once the tools list and a reply are paid for, all counted
 * with the model's own chat template and tokenizer (`POST /apply-template`, `POST /tokenize`).
 * A request whose prompt would not fit ends the run with a typed `ContextBudgetExceeded`,
 * reported as the failure kind `context_exceeded` rather than as a backend error.
 */
import type { PromptTokenizer } from "../../src/clients/llama-server/tokenizer.ts";
import { ContextBudgetExceeded } from "../../src/core/errors.ts";
import type { ToolSpec } from "../../src/core/tools.ts";
import type { LLMClient, LLMResponse, SendOptions, StreamChunk } from "../../src/core/types.ts";
import { renderSystemPrompt, type Workflow } from "../../src/core/workflow.ts";

/** Tokens kept free for the model's reply: a prompt may use the window less this. */
export const REPLY_RESERVE_TOKENS = 128;

/** The failure kind of a run whose prompt outgrew the backend's context window. */
export const CONTEXT_EXCEEDED = "context_exceeded";

// The tokenizer lives in the library now (`forge-guardrails/clients`); re-exported for the harness.
export {
  createLlamaServerTokenizer,
  type LlamaServerTokenizerOptions,
  type PromptTokenizer,
} from "../../src/clients/llama-server/tokenizer.ts";

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
