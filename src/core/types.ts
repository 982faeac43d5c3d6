/**
 * What an LLM client returns and streams, and the client contract the loop relies on.
 */
import type { ApiFormat } from "./messages.ts";
import type { ToolSpec } from "./tools.ts";

/** A tool invocation parsed from the model's output. */
export interface ToolCall {
  tool: string;
  args: Record<string, unknown>;
  /** The model's chain of thought that came with the call, when it gave one. */
  reasoning?: string;
  /**
   * Set when the backend named a tool but its arguments could not be decoded into a JSON object
   * (unparseable JSON, an array, a string…): what was wrong and an excerpt of what it sent. `args`
   * is then `{}`. The loop answers such a call on the tool channel, as a failing tool.
   */
  argumentsError?: string;
}

/** Output that is not a tool call: prose, a refusal, or a call the client could not parse. */
export interface TextResponse {
  content: string;
}

/** A client's answer: `Array.isArray()` tells a tool-call list from a text response. */
export type LLMResponse = ToolCall[] | TextResponse;

/** Kinds of streamed chunk. */
export const ChunkType = {
  TEXT_DELTA: "text_delta",
  TOOL_CALL_DELTA: "tool_call_delta",
  FINAL: "final",
  RETRY: "retry",
} as const;
export type ChunkType = (typeof ChunkType)[keyof typeof ChunkType];

/** One streamed chunk. Only FINAL carries `response`; RETRY tells consumers to drop partial output. */
export interface StreamChunk {
  type: ChunkType;
  content?: string;
  response?: LLMResponse;
  /**
   * On a TOOL_CALL_DELTA, when the client knows it: which call the arguments belong to (its place
   * among the answer's calls, from 0) and the tool's name so far.
   */
  toolCall?: { position: number; name: string };
}

/**
 * What the backend said one request's prompt cost, in its own tokens.
 * `promptTokens` is the whole prompt (tools and chat template included); `cachedTokens` the part
 * served from the server's prompt cache (llama-server `cache_prompt`), when it says.
 */
export interface TokenUsage {
  promptTokens: number;
  cachedTokens?: number;
  /** The part of the prompt written to the prompt cache (Anthropic's `cache_creation_input_tokens`), when it says. */
  cacheWriteTokens?: number;
  completionTokens?: number;
}

/**
 * Sampling for one call, merged over the client's configured sampling (a value given here wins;
 * one left out keeps the client's). Each client sends the fields its backend knows.
 */
export interface SamplingOverrides {
  temperature?: number;
  topP?: number;
  topK?: number;
  minP?: number;
  /** Multiplicative repetition penalty (llama.cpp/Ollama `repeat_penalty`, transformers `repetition_penalty`); 1 is off. */
  repeatPenalty?: number;
  /** Additive penalty on every token already present (`presence_penalty`); 0 is off. */
  presencePenalty?: number;
  /** The most tokens of one answer (`max_tokens`; Ollama's `options.num_predict`). */
  maxTokens?: number;
  seed?: number;
}

/**
 * Whether the model must call a tool on one request: `"auto"` lets it choose, `"required"` asks
 * for a call (any tool), `"none"` for no call, `{ name }` for a call of that tool. Each client maps
 * it to its backend's own field where the backend has one (see each client's `send`).
 */
export type ToolChoice = "auto" | "required" | "none" | { name: string };

/** Per-request options every client accepts. */
export interface SendOptions {
  signal?: AbortSignal;
  /**
   * Sampling for this call only, over the client's own.
   * @example
   * await client.send(messages, tools, { sampling: { temperature: 0 } });
   */
  sampling?: SamplingOverrides;
  /**
   * Called with the answer's token usage when the backend reports it (`OpenAICompatibleClient`:
   * `usage`, or llama-server's `timings` on a stream). A `ContextManager` fed these counts through
   * `observeUsage` decides on the backend's real tokens.
   */
  onUsage?: (usage: TokenUsage) => void;
  /**
   * The run this call belongs to (the loop sets it). A pool of endpoints (`EndpointPool`) keeps a
   * run's calls on one server, so its prompt cache serves the history it already holds; other
   * clients ignore it.
   */
  runId?: string;
  /**
   * Where the call waits for a slot of a pool (`EndpointPool`): lower rank runs first, FIFO within
   * a rank, as `SlotWorker`. Default 0; other clients ignore it.
   */
  rank?: number;
  /**
   * The same number under its old name (lower first), read when `rank` is absent.
   * @deprecated use rank (lower first)
   */
  priority?: number;
  /**
   * Whether this call must call a tool, over the client's own `toolChoice` option. Sent only with
   * tools. `OpenAICompatibleClient` sends `tool_choice` (native mode; prompt mode has no way to
   * force), `AnthropicClient` `tool_choice` (`any` / `tool` / `none`), `LlamaCppClient` forces a
   * call through its chat wrapper in functions mode; `OllamaClient` ignores it (Ollama's chat API
   * has no such field). The loop sets `"required"` on the retry after a prose answer
   * (`forceToolChoiceOnRetry`).
   * @example
   * await client.send(messages, tools, { toolChoice: "required" });
   */
  toolChoice?: ToolChoice;
  /**
   * Whether the model may answer with several tool calls at once. `OpenAICompatibleClient` sends
   * it as `parallel_tool_calls` (native mode only; llama-server keeps parallel calls off unless it
   * is `true`); other clients ignore it. The loop sets `true` when `toolConcurrency` is above 1.
   * @example
   * await client.send(messages, tools, { parallelToolCalls: true });
   */
  parallelToolCalls?: boolean;
}

/**
 * The abstraction boundary between the loop and a backend. Clients never retry; the loop does.
 */
export interface LLMClient {
  readonly apiFormat: ApiFormat;
  send(messages: Record<string, unknown>[], tools?: ToolSpec[], options?: SendOptions): Promise<LLMResponse>;
  sendStream(
    messages: Record<string, unknown>[],
    tools?: ToolSpec[],
    options?: SendOptions,
  ): AsyncIterable<StreamChunk>;
  getContextLength(): Promise<number | null>;
}

/** True when `response` is a tool-call list. */
export function isToolCallList(response: LLMResponse): response is ToolCall[] {
  return Array.isArray(response);
}

/** True when `value` has the shape of an `LLMResponse` (used to reject a misbehaving client loudly). */
export function isLLMResponse(value: unknown): value is LLMResponse {
  if (Array.isArray(value)) {
    return value.every(
      (call) =>
        typeof call === "object" &&
        call !== null &&
        typeof (call as ToolCall).tool === "string" &&
        typeof (call as ToolCall).args === "object" &&
        (call as ToolCall).args !== null &&
        !Array.isArray((call as ToolCall).args) &&
        ((call as ToolCall).reasoning === undefined || typeof (call as ToolCall).reasoning === "string"),
    );
  }
  return typeof value === "object" && value !== null && typeof (value as TextResponse).content === "string";
}
