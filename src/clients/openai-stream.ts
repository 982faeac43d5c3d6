/**
 * Streaming chat completions: SSE events parsed with eventsource-parser, deltas passed on as they
 * come, and the assembled answer sent as the FINAL chunk.
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { z } from "zod";
import { BackendError, StreamError } from "../core/errors.ts";
import { ChunkType, type StreamChunk } from "../core/types.ts";
import type { Exchange } from "./http.ts";
import { responseFromParseFailure, toolParseFailureOutput } from "./llama-server-errors.ts";
import {
  ChatStreamAssembler,
  chatChunkSchema,
  type ReadContext,
  readMessage,
  streamErrorSchema,
} from "./openai-wire.ts";
import { checkStreamEvent, isPlainObject, parseStreamEvent } from "./wire.ts";

/** What one event means: chunks to pass on, the end of the stream, or the final answer already. */
type EventOutcome =
  | { kind: "chunks"; chunks: StreamChunk[] }
  | { kind: "done" }
  | { kind: "final"; chunk: StreamChunk };

/**
 * Read a `text/event-stream` chat completion: TEXT_DELTA per content delta, TOOL_CALL_DELTA per
 * tool-call argument delta, then FINAL with the assembled response. A stream that ends without
 * `[DONE]` or a `finish_reason`, or that carries malformed JSON, is a `StreamError`. An error event
 * is a `BackendError`, except llama-server's tool-call parse failure, which is rescued.
 */
export async function* streamChatCompletion(
  exchange: Exchange,
  context: ReadContext,
  source: string,
): AsyncGenerator<StreamChunk> {
  const assembler = new ChatStreamAssembler();
  const events: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => events.push(event) });
  let done = false;
  let eventCount = 0;
  try {
    reading: for (let text = await exchange.read(); text !== null; text = await exchange.read()) {
      parser.feed(text);
      for (let event = events.shift(); event; event = events.shift()) {
        eventCount += 1;
        const outcome = readEvent(event, assembler, context, source);
        if (outcome.kind === "final") {
          yield outcome.chunk;
          return;
        }
        if (outcome.kind === "done") {
          done = true;
          break reading;
        }
        yield* outcome.chunks;
      }
    }
  } finally {
    // After [DONE] the connection is handed back for reuse; an unfinished stream is cut.
    if (done) exchange.release();
    else exchange.close();
  }
  if (!done && !assembler.finished) {
    throw new StreamError(
      `Stream from ${source} ended without [DONE] or a finish_reason after ${eventCount} events: it was truncated`,
    );
  }
  yield { type: ChunkType.FINAL, response: readMessage(assembler.message(), context) };
}

function readEvent(
  event: EventSourceMessage,
  assembler: ChatStreamAssembler,
  context: ReadContext,
  source: string,
): EventOutcome {
  const data = event.data.trim();
  if (data === "[DONE]") return { kind: "done" };
  if (data.length === 0) return { kind: "chunks", chunks: [] };
  // Parsed first, checked once it is known to be an error event or a chunk.
  const value = parseStreamEvent(z.unknown(), data, source);
  if (isPlainObject(value) && "error" in value) {
    const { error } = checkStreamEvent(streamErrorSchema, value, source);
    const status = error.code ?? 500;
    const output = toolParseFailureOutput(status, data);
    if (output === null)
      throw new BackendError(status, data, `Error in the stream from ${source}: ${error.message}`);
    const response = responseFromParseFailure(output, context.toolNames, context.think);
    return { kind: "final", chunk: { type: ChunkType.FINAL, response } };
  }
  return { kind: "chunks", chunks: assembler.push(checkStreamEvent(chatChunkSchema, value, source)) };
}
