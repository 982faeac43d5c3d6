/**
 * The OpenAI chat-completions wire as llama-server, llamafile and vLLM speak it: zod schemas of
 * what comes back, assembly of streamed deltas, and the reading of a message as an `LLMResponse`.
 */
import { z } from "zod";
import type { ToolSpec } from "../../core/tools.ts";
import {
  ChunkType,
  type LLMResponse,
  type StreamChunk,
  type TokenUsage,
  type ToolCall,
} from "../../core/types.ts";
import { extractToolCall } from "../../prompts/tool-prompt.ts";
import { resolveReasoning } from "../reasoning.ts";
import { decodeCall, isNullishInteger, isNullishString, isPlainObject } from "../wire.ts";

const toolCallSchema = z.object({
  id: z.string().nullish(),
  type: z.string().nullish(),
  function: z.object({
    name: z.string(),
    arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).nullish(),
  }),
});

/** A non-streamed `/chat/completions` answer (only the fields the client reads). */
export const chatCompletionSchema = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullish(),
          reasoning_content: z.string().nullish(),
          tool_calls: z.array(toolCallSchema).nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
});

/**
 * The first token's alternatives of a non-streamed answer asked with `logprobs` and
 * `top_logprobs` (OpenAI's shape; llama-server and vLLM answer it too). A server that ignores the
 * fields answers with no `logprobs`: the alternatives are then unknown.
 */
export const firstTokenSchema = z.object({
  choices: z
    .array(
      z.object({
        logprobs: z
          .object({
            content: z
              .array(
                z.object({
                  token: z.string(),
                  logprob: z.number(),
                  top_logprobs: z.array(z.object({ token: z.string(), logprob: z.number() })).nullish(),
                }),
              )
              .nullish(),
          })
          .nullish(),
      }),
    )
    .min(1),
});

const toolCallDeltaSchema = z.object({
  index: z.number().int().nonnegative().nullish(),
  id: z.string().nullish(),
  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
});

/** One streamed `chat.completion.chunk`; the last one of llama-server may have no choices. */
export const chatChunkSchema = z.object({
  choices: z.array(
    z.object({
      index: z.number().int().nullish(),
      delta: z
        .object({
          content: z.string().nullish(),
          reasoning_content: z.string().nullish(),
          tool_calls: z.array(toolCallDeltaSchema).nullish(),
        })
        .nullish(),
      finish_reason: z.string().nullish(),
    }),
  ),
});
/** A parsed stream chunk. */
export type ChatChunk = z.output<typeof chatChunkSchema>;
type ToolCallDelta = z.output<typeof toolCallDeltaSchema>;

/** A parsed non-streamed answer. */
export type ChatCompletion = z.output<typeof chatCompletionSchema>;

/*
 * Hand-written checks that accept exactly what the schemas above accept (or less), so the usual
 * well-formed answer skips zod: each SSE event is checked as it comes, and zod's cost per event
 * would be most of the client's own. Anything they reject goes to zod, which decides and names
 * the bad field. test/clients/wire-checks.test.ts holds them to the schemas.
 */

/** True when `value` passes `chatChunkSchema` as it is. */
export function isChatChunk(value: unknown): value is ChatChunk {
  if (!isPlainObject(value) || !Array.isArray(value.choices)) return false;
  for (const choice of value.choices) {
    if (!isPlainObject(choice) || !isNullishInteger(choice.index) || !isNullishString(choice.finish_reason)) {
      return false;
    }
    const delta = choice.delta;
    if (delta === undefined || delta === null) continue;
    if (
      !isPlainObject(delta) ||
      !isNullishString(delta.content) ||
      !isNullishString(delta.reasoning_content)
    ) {
      return false;
    }
    if (!isNullishArrayOf(delta.tool_calls, isToolCallDelta)) return false;
  }
  return true;
}

function isToolCallDelta(value: unknown): boolean {
  if (!isPlainObject(value) || !isNullishString(value.id)) return false;
  const index = value.index;
  if (!isNullishInteger(index) || (typeof index === "number" && index < 0)) return false;
  const fn = value.function;
  if (fn === undefined || fn === null) return true;
  return isPlainObject(fn) && isNullishString(fn.name) && isNullishString(fn.arguments);
}

/** True when `value` passes `chatCompletionSchema` as it is. */
export function isChatCompletion(value: unknown): value is ChatCompletion {
  if (!isPlainObject(value) || !Array.isArray(value.choices) || value.choices.length === 0) return false;
  for (const choice of value.choices) {
    if (!isPlainObject(choice) || !isNullishString(choice.finish_reason)) return false;
    const message = choice.message;
    if (!isPlainObject(message) || !isNullishString(message.content)) return false;
    if (!isNullishString(message.reasoning_content)) return false;
    if (!isNullishArrayOf(message.tool_calls, isToolCall)) return false;
  }
  return true;
}

function isToolCall(value: unknown): boolean {
  if (!isPlainObject(value) || !isNullishString(value.id) || !isNullishString(value.type)) return false;
  const fn = value.function;
  if (!isPlainObject(fn) || typeof fn.name !== "string") return false;
  const args = fn.arguments;
  return isNullishString(args) || isPlainObject(args);
}

function isNullishArrayOf(value: unknown, isItem: (item: unknown) => boolean): boolean {
  return value === undefined || value === null || (Array.isArray(value) && value.every(isItem));
}

/** An error reported inside a stream: `data: {"error": {"code": 500, "message": "…"}}`. */
export const streamErrorSchema = z.object({
  error: z.union([
    z.object({ code: z.number().int().nullish(), message: z.string() }),
    z.string().transform((message) => ({ code: null, message })),
  ]),
});

/** A message as the client reads it, whether it arrived whole or as deltas. */
export interface AssembledMessage {
  content: string;
  reasoningContent: string | null;
  toolCalls: { name: string; arguments: unknown }[];
}

/** The message of a non-streamed answer. */
export function messageOfCompletion(completion: ChatCompletion): AssembledMessage {
  const message = completion.choices[0]?.message;
  return {
    content: message?.content ?? "",
    reasoningContent: message?.reasoning_content ?? null,
    toolCalls: (message?.tool_calls ?? []).map((call) => ({
      name: call.function.name,
      arguments: call.function.arguments,
    })),
  };
}

/** How the client asked for tools, which decides how the answer is read. */
export interface ReadContext {
  mode: "native" | "prompt";
  toolNames: string[];
  /** The offered tools' specs: prompt-mode Qwen-Coder values are converted by their schemas. */
  tools?: readonly ToolSpec[] | undefined;
  think: boolean | undefined;
  /** Receives the usage a stream's chunks report (see `usageOfAnswer`). */
  onUsage?: ((usage: TokenUsage) => void) | undefined;
}

/**
 * Read a message as an `LLMResponse`. Native: `tool_calls`; a call whose arguments are not a JSON
 * object keeps its name and carries `argumentsError` (the loop answers it on the tool channel). Prompt:
 * `extractToolCall` on the answer. Reasoning (server field first, then think tags) goes to the
 * first call; text next to native calls is kept with it. Text answers drop the think tags.
 */
export function readMessage(message: AssembledMessage, context: ReadContext): LLMResponse {
  const { reasoning, answer } = resolveReasoning(message.reasoningContent, message.content, context.think);
  if (context.mode === "native" && message.toolCalls.length > 0) {
    const calls = message.toolCalls.map((call) => decodeCall(call.name, call.arguments));
    return withReasoning(calls, [reasoning, answer]);
  }
  if (context.mode === "prompt" && context.toolNames.length > 0) {
    const calls = extractToolCall(answer, context.toolNames, context.tools ? { tools: context.tools } : {});
    if (calls) return withReasoning(calls, [reasoning]);
  }
  return { content: answer.length > 0 ? answer : message.content };
}

/** Attach the non-empty `parts` as the reasoning of the first call. */
export function withReasoning(calls: ToolCall[], parts: (string | null)[]): ToolCall[] {
  const reasoning = parts.filter((part): part is string => !!part && part.trim().length > 0).join("\n\n");
  const [first, ...rest] = calls;
  if (!first || reasoning.length === 0) return calls;
  return [{ ...first, reasoning }, ...rest];
}

interface PartialCall {
  id: string | undefined;
  name: string;
  arguments: string;
  /** Its place among the answer's calls, in the order they started. */
  position: number;
}

/**
 * Assembles a streamed answer: content and reasoning deltas are concatenated, tool-call deltas
 * are gathered by their `index` (a delta without one continues the last call, unless it brings a
 * new `id`). Only the first choice is read.
 */
export class ChatStreamAssembler {
  #content = "";
  #reasoning = "";
  readonly #calls = new Map<number, PartialCall>();
  #lastIndex = -1;
  #finished = false;

  /** True once a choice reported a `finish_reason`. */
  get finished(): boolean {
    return this.#finished;
  }

  /** Take one chunk; the chunks to pass on (TEXT_DELTA, TOOL_CALL_DELTA) are appended to `out`. */
  push(chunk: ChatChunk, out: StreamChunk[] = []): StreamChunk[] {
    for (const choice of chunk.choices) {
      if ((choice.index ?? 0) !== 0) continue;
      const delta = choice.delta;
      if (delta) {
        if (delta.reasoning_content) this.#reasoning += delta.reasoning_content;
        if (delta.content) {
          this.#content += delta.content;
          out.push({ type: ChunkType.TEXT_DELTA, content: delta.content });
        }
        if (delta.tool_calls) this.#pushCalls(delta.tool_calls, out);
      }
      if (choice.finish_reason) this.#finished = true;
    }
    return out;
  }

  /** The message assembled so far. */
  message(): AssembledMessage {
    const calls = [...this.#calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
    return {
      content: this.#content,
      reasoningContent: this.#reasoning.length > 0 ? this.#reasoning : null,
      toolCalls: calls.map((call) => ({ name: call.name, arguments: call.arguments })),
    };
  }

  #pushCalls(calls: ToolCallDelta[], out: StreamChunk[]): void {
    for (const call of calls) {
      const partial = this.#callFor(call.index ?? undefined, call.id ?? undefined);
      if (call.function?.name && partial.name.length === 0) partial.name = call.function.name;
      const argumentsDelta = call.function?.arguments;
      if (argumentsDelta) {
        partial.arguments += argumentsDelta;
        out.push({
          type: ChunkType.TOOL_CALL_DELTA,
          content: argumentsDelta,
          toolCall: { position: partial.position, name: partial.name },
        });
      }
    }
  }

  #callFor(index: number | undefined, id: string | undefined): PartialCall {
    let key = index;
    if (key === undefined) {
      const last = this.#calls.get(this.#lastIndex);
      const isNewCall = !last || (id !== undefined && last.id !== undefined && last.id !== id);
      key = isNewCall ? this.#lastIndex + 1 : this.#lastIndex;
    }
    let call = this.#calls.get(key);
    if (!call) {
      call = { id, name: "", arguments: "", position: this.#calls.size };
      this.#calls.set(key, call);
    }
    call.id ??= id;
    this.#lastIndex = Math.max(this.#lastIndex, key);
    return call;
  }
}
