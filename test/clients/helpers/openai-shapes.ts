/**
 * Builders for the OpenAI chat-completions wire as llama-server sends it (non-streamed answers,
 * stream chunks, error bodies), and the tools the client tests use.
 */
import { z } from "zod";
import type { ToolSpec } from "../../../src/core/tools.ts";

export const getWeather: ToolSpec = {
  name: "get_weather",
  description: "Current weather for a city",
  parameters: z.object({ city: z.string() }),
};
export const reportWeather: ToolSpec = {
  name: "report_weather",
  description: "Report the weather to the user",
  parameters: z.object({ text: z.string() }),
};
export const tools = [getWeather, reportWeather];

/** A non-streamed answer with `message` (llama-server adds usage, timings and ids around it). */
export function completion(message: {
  content?: string | null;
  reasoning_content?: string;
  tool_calls?: { name: string; arguments: string; id?: string }[];
}): Record<string, unknown> {
  return {
    id: "chatcmpl-replay",
    object: "chat.completion",
    created: 1_760_000_000,
    model: "test-model",
    choices: [
      {
        index: 0,
        finish_reason: message.tool_calls ? "tool_calls" : "stop",
        message: {
          role: "assistant",
          content: message.content ?? null,
          ...(message.reasoning_content !== undefined && { reasoning_content: message.reasoning_content }),
          ...(message.tool_calls && {
            tool_calls: message.tool_calls.map((call, index) => ({
              type: "function",
              id: call.id ?? `call_${index}`,
              function: { name: call.name, arguments: call.arguments },
            })),
          }),
        },
      },
    ],
    usage: { prompt_tokens: 42, completion_tokens: 7, total_tokens: 49 },
  };
}

/** One `chat.completion.chunk` with `delta` (and a finish reason on the last one). */
export function chunk(
  delta: Record<string, unknown>,
  finishReason: string | null = null,
): Record<string, unknown> {
  return {
    id: "chatcmpl-replay",
    object: "chat.completion.chunk",
    created: 1_760_000_000,
    model: "test-model",
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  };
}

/** llama-server's error body: `{"error": {"code", "message", "type"}}`. */
export function errorBody(code: number, message: string, type = "server_error"): Record<string, unknown> {
  return { error: { code, message, type } };
}

export const CHAT = "POST /v1/chat/completions";
