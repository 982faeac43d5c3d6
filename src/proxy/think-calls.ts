/**
 * Calls inside unclosed reasoning on the proxy's guarded path (ADR 027, `--think-calls`): a client
 * around the request's client that reads the call a text answer ends its unclosed `<think>` with
 * (`readThinkCall`) and hands it to the loop as the answer's calls, which the loop then validates
 * like native ones. Any other text answer goes on untouched (the rescue drops its reasoning).
 */
import type { ToolSpec } from "../core/tools.ts";
import {
  ChunkType,
  type LLMClient,
  type LLMResponse,
  type SendOptions,
  type StreamChunk,
} from "../core/types.ts";
import { readThinkCall } from "../prompts/rescue/think-call.ts";

/** Reads calls out of unclosed reasoning; see the module comment. */
export class ThinkCallClient implements LLMClient {
  readonly apiFormat: LLMClient["apiFormat"];
  readonly #inner: LLMClient;
  readonly #tools: readonly ToolSpec[];
  /** The latest answer's calls were read from unclosed reasoning. */
  lastWasThinkCall = false;

  /** `tools`: every tool the request accepts calls of (the whole set, also when narrowed). */
  constructor(inner: LLMClient, tools: readonly ToolSpec[]) {
    this.apiFormat = inner.apiFormat;
    this.#inner = inner;
    this.#tools = tools;
  }

  async send(
    messages: Record<string, unknown>[],
    tools?: ToolSpec[],
    options?: SendOptions,
  ): Promise<LLMResponse> {
    return this.#read(await this.#inner.send(messages, tools, options));
  }

  async *sendStream(
    messages: Record<string, unknown>[],
    tools?: ToolSpec[],
    options?: SendOptions,
  ): AsyncIterable<StreamChunk> {
    for await (const chunk of this.#inner.sendStream(messages, tools, options)) {
      if (chunk.type === ChunkType.FINAL && chunk.response !== undefined) {
        yield { ...chunk, response: this.#read(chunk.response) };
      } else {
        yield chunk;
      }
    }
  }

  getContextLength(): Promise<number | null> {
    return this.#inner.getContextLength();
  }

  #read(response: LLMResponse): LLMResponse {
    this.lastWasThinkCall = false;
    if (Array.isArray(response)) return response;
    const names = this.#tools.map((tool) => tool.name);
    const read = readThinkCall(response.content, names, { tools: this.#tools });
    if (read === null) return response;
    this.lastWasThinkCall = true;
    return read.calls;
  }
}
