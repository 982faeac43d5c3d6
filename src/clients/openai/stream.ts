/**
 * Streaming chat completions: SSE events parsed with eventsource-parser, deltas passed on as they
 * come, and the assembled answer sent as the FINAL chunk.
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { BackendError, StreamError } from "../../core/errors.ts";
import { ChunkType, type StreamChunk } from "../../core/types.ts";
import { responseFromParseFailure, toolParseFailureOutput } from "../llama-server/errors.ts";
import { checkStreamEvent, isPlainObject, parseStreamJson } from "../wire.ts";
import type { ChatAnswer } from "./chat-exchange.ts";
import { reportUsage } from "./usage.ts";
import {
  ChatStreamAssembler,
  chatChunkSchema,
  isChatChunk,
  type ReadContext,
  readMessage,
  streamErrorSchema,
} from "./wire.ts";

/** An opened stream and how to read its answer, or the FINAL chunk when the request failed. */
export type OpenedStream = { exchange: ChatAnswer; context: ReadContext } | StreamChunk;

/** What one event meant, besides the deltas it passed on: go on, the end of the stream, or the answer. */
type EventOutcome = "more" | "done" | StreamChunk;

/**
 * Read a `text/event-stream` chat completion: TEXT_DELTA per content delta, TOOL_CALL_DELTA per
 * tool-call argument delta, then FINAL with the assembled response. A stream that ends without
 * `[DONE]` or a `finish_reason`, or that carries malformed JSON, is a `StreamError`. An error event
 * is a `BackendError`, except llama-server's tool-call parse failure, which is rescued.
 *
 * `open` sends the request, on the first `next()`. Taking it here, rather than the caller
 * delegating to this generator with `yield*` from its own, keeps one generator from the request to
 * FINAL: a second one would cost a promise hop for every chunk.
 */
export async function* streamChatCompletion(
  open: () => Promise<OpenedStream>,
  source: string,
): AsyncGenerator<StreamChunk> {
  const opened = await open();
  if (!("exchange" in opened)) {
    yield opened;
    return;
  }
  const { exchange, context } = opened;
  const assembler = new ChatStreamAssembler();
  const events: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => events.push(event) });
  const deltas: StreamChunk[] = [];
  let done = false;
  let eventCount = 0;
  try {
    reading: for (let text = await exchange.read(); text !== null; text = await exchange.read()) {
      parser.feed(text);
      // Indexed, not shifted: a feed usually brings one event, and the list is emptied after it.
      for (let index = 0; index < events.length; index += 1) {
        eventCount += 1;
        const outcome = readEvent(events[index] as EventSourceMessage, assembler, deltas, context, source);
        for (const delta of deltas) yield delta;
        deltas.length = 0;
        if (outcome === "done") {
          done = true;
          break reading;
        }
        if (outcome !== "more") {
          done = true;
          yield outcome;
          return;
        }
      }
      events.length = 0;
    }
  } finally {
    // After the last event the connection is handed back for reuse; an unfinished stream is cut.
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
  deltas: StreamChunk[],
  context: ReadContext,
  source: string,
): EventOutcome {
  const data = event.data.trim();
  if (data === "[DONE]") return "done";
  if (data.length === 0) return "more";
  // Parsed first, checked once it is known to be an error event or a chunk.
  const value = parseStreamJson(data, source);
  if (isPlainObject(value) && "error" in value) {
    const { error } = checkStreamEvent(streamErrorSchema, value, source);
    const status = error.code ?? 500;
    const output = toolParseFailureOutput(status, data);
    if (output === null)
      throw new BackendError(status, data, `Error in the stream from ${source}: ${error.message}`);
    const response = responseFromParseFailure(output, context.toolNames, context.think, context.tools);
    return { type: ChunkType.FINAL, response };
  }
  // The hand-written check passes every well-formed chunk; zod reports what is wrong with the rest.
  const chunk = isChatChunk(value) ? value : checkStreamEvent(chatChunkSchema, value, source);
  if (context.onUsage) reportUsage(value, context.onUsage);
  assembler.push(chunk, deltas);
  return "more";
}
