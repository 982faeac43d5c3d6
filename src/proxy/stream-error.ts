/**
 * A fault after an SSE answer has begun cannot change its status: it ends the stream with an
 * error event in the streaming format of the client's API.
 */
import { errorBody, type ProxyApi, type ProxyHttpError } from "./errors.ts";

/**
 * The last event of a stream that failed: OpenAI's `data: {"error": …}` (what the `openai` SDK
 * raises as an `APIError`), or Anthropic's `event: error` with its error object.
 */
export function sseErrorEvent(api: ProxyApi, error: ProxyHttpError): string {
  const data = JSON.stringify(errorBody(api, error));
  return api === "anthropic" ? `event: error\ndata: ${data}\n\n` : `data: ${data}\n\n`;
}
