/**
 * What the Anthropic SDK hands back, checked with zod: a `Message`, and the raw stream events,
 * assembled into the same message shape the other clients read.
 */
import { z } from "zod";
import { ChunkType, type StreamChunk, type TokenUsage } from "../../core/types.ts";
import type { AssembledMessage } from "../openai/wire.ts";
import { checkStreamEvent } from "../wire.ts";

const contentBlockSchema = z.object({
  type: z.string(),
  text: z.string().optional(),
  thinking: z.string().optional(),
  id: z.string().optional(),
  name: z.string().optional(),
  input: z.unknown().optional(),
});
type ContentBlock = z.output<typeof contentBlockSchema>;

const usageSchema = z.object({
  input_tokens: z.number(),
  output_tokens: z.number(),
  cache_creation_input_tokens: z.number().nullish(),
  cache_read_input_tokens: z.number().nullish(),
});

/** A non-streamed Messages API answer (only the fields the client reads). */
export const anthropicMessageSchema = z.object({
  content: z.array(contentBlockSchema),
  stop_reason: z.string().nullish(),
  usage: usageSchema,
});

/** Token counts of the last call. */
export interface AnthropicUsage {
  /** Input tokens neither read from nor written to the prompt cache. */
  inputTokens: number;
  outputTokens: number;
  /** Input tokens written to the prompt cache (`cache_creation_input_tokens`), when reported. */
  cacheCreationInputTokens?: number;
  /** Input tokens read from the prompt cache (`cache_read_input_tokens`), when reported. */
  cacheReadInputTokens?: number;
}

/** The client's usage of an answer's `usage` object (the cache fields only when present). */
export function anthropicUsage(usage: {
  input_tokens?: number | undefined;
  output_tokens?: number | undefined;
  cache_creation_input_tokens?: number | null | undefined;
  cache_read_input_tokens?: number | null | undefined;
}): AnthropicUsage {
  return {
    inputTokens: usage.input_tokens ?? 0,
    outputTokens: usage.output_tokens ?? 0,
    ...(typeof usage.cache_creation_input_tokens === "number" && {
      cacheCreationInputTokens: usage.cache_creation_input_tokens,
    }),
    ...(typeof usage.cache_read_input_tokens === "number" && {
      cacheReadInputTokens: usage.cache_read_input_tokens,
    }),
  };
}

/**
 * The loop's `TokenUsage` of an Anthropic usage: the whole prompt (uncached + cache writes +
 * cache reads) and the cache reads as `cachedTokens`.
 */
export function tokenUsageOf(usage: AnthropicUsage): TokenUsage {
  const cached = usage.cacheReadInputTokens ?? 0;
  return {
    promptTokens: usage.inputTokens + (usage.cacheCreationInputTokens ?? 0) + cached,
    ...(usage.cacheReadInputTokens !== undefined && { cachedTokens: cached }),
    ...(usage.cacheCreationInputTokens !== undefined && { cacheWriteTokens: usage.cacheCreationInputTokens }),
    completionTokens: usage.outputTokens,
  };
}

/** The text, thinking and tool calls of a list of content blocks. */
export function messageOfBlocks(blocks: readonly ContentBlock[]): AssembledMessage {
  const text = blocks.filter((block) => block.type === "text").map((block) => block.text ?? "");
  const thinking = blocks.filter((block) => block.type === "thinking").map((block) => block.thinking ?? "");
  return {
    content: text.join(""),
    reasoningContent: thinking.length > 0 ? thinking.join("\n\n") : null,
    toolCalls: blocks
      .filter((block) => block.type === "tool_use")
      .map((block) => ({ name: block.name ?? "", arguments: block.input ?? {} })),
  };
}

const EVENT_SCHEMAS = {
  message_start: z.object({ message: z.object({ usage: usageSchema.partial() }) }),
  content_block_start: z.object({ index: z.number().int(), content_block: contentBlockSchema }),
  content_block_delta: z.object({
    index: z.number().int(),
    delta: z.object({
      type: z.string(),
      text: z.string().optional(),
      partial_json: z.string().optional(),
      thinking: z.string().optional(),
    }),
  }),
  message_delta: z.object({ usage: z.object({ output_tokens: z.number() }).partial().nullish() }),
} as const;

/** Every event's `type`, read first to pick the event's schema. */
const EVENT_TYPE_SCHEMA = z.object({ type: z.string() });

interface PartialBlock {
  type: string;
  text: string;
  thinking: string;
  id: string | undefined;
  name: string | undefined;
  json: string;
  input: unknown;
}

/**
 * Assembles the raw stream events of one message: text deltas pass on as TEXT_DELTA, tool input
 * JSON deltas as TOOL_CALL_DELTA, and the blocks are rebuilt by index. Unknown events are ignored.
 */
export class AnthropicStreamAssembler {
  readonly #blocks = new Map<number, PartialBlock>();
  #usage: AnthropicUsage = { inputTokens: 0, outputTokens: 0 };
  #stopped = false;

  /** True once `message_stop` arrived. */
  get stopped(): boolean {
    return this.#stopped;
  }

  get usage(): AnthropicUsage {
    return { ...this.#usage };
  }

  push(event: unknown, source: string): StreamChunk[] {
    const { type } = checkStreamEvent(EVENT_TYPE_SCHEMA, event, source);
    switch (type) {
      case "message_start": {
        const { message } = checkStreamEvent(EVENT_SCHEMAS.message_start, event, source);
        this.#usage = anthropicUsage(message.usage);
        return [];
      }
      case "content_block_start": {
        const { index, content_block: block } = checkStreamEvent(
          EVENT_SCHEMAS.content_block_start,
          event,
          source,
        );
        this.#blocks.set(index, {
          type: block.type,
          text: block.text ?? "",
          thinking: block.thinking ?? "",
          id: block.id,
          name: block.name,
          json: "",
          input: block.input,
        });
        return [];
      }
      case "content_block_delta":
        return this.#delta(checkStreamEvent(EVENT_SCHEMAS.content_block_delta, event, source));
      case "message_delta": {
        const { usage } = checkStreamEvent(EVENT_SCHEMAS.message_delta, event, source);
        this.#usage.outputTokens = usage?.output_tokens ?? this.#usage.outputTokens;
        return [];
      }
      case "message_stop":
        this.#stopped = true;
        return [];
      default:
        return [];
    }
  }

  /** The blocks received, in index order; a tool's input is its JSON deltas (raw when not JSON). */
  blocks(): ContentBlock[] {
    return [...this.#blocks.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, block]) => ({
        type: block.type,
        text: block.text,
        thinking: block.thinking,
        ...(block.id !== undefined && { id: block.id }),
        ...(block.name !== undefined && { name: block.name }),
        input: block.type === "tool_use" && block.json.length > 0 ? block.json : (block.input ?? {}),
      }));
  }

  #delta(event: z.output<(typeof EVENT_SCHEMAS)["content_block_delta"]>): StreamChunk[] {
    const block = this.#blocks.get(event.index);
    if (!block) return [];
    const { delta } = event;
    if (delta.type === "text_delta" && delta.text) {
      block.text += delta.text;
      return [{ type: ChunkType.TEXT_DELTA, content: delta.text }];
    }
    if (delta.type === "input_json_delta" && delta.partial_json) {
      block.json += delta.partial_json;
      return [{ type: ChunkType.TOOL_CALL_DELTA, content: delta.partial_json }];
    }
    if (delta.type === "thinking_delta" && delta.thinking) block.thinking += delta.thinking;
    return [];
  }
}
