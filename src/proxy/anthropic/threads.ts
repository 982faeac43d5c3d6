/**
 * Anthropic message threads (the `message-threads` beta: a request with `thread`, after which the
 * server keeps the conversation and each turn sends only its new messages, without `system` and
 * `tools`). The proxy keeps no state, and a continued thread read as a whole conversation would
 * lose its history without a word, so a request with `thread` is refused before anything runs.
 */
import { ProxyErrorKind, ProxyHttpError } from "../errors.ts";

/** The `error_code` the Anthropic SDK reads as "this request cannot be threaded". */
export const THREAD_UNSUPPORTED_CODE = "thread_unsupported_request";

/**
 * Throws a 400 for a body with `thread`, in the shape the Anthropic SDK recovers from: its tool
 * runner (`client.beta.messages.toolRunner`, which threads by default) sends the same turn again
 * with the whole conversation and no `thread`; a caller of `client.beta.messages.thread()` gets
 * the error, which says what to send instead.
 */
export function refuseMessageThread(body: Record<string, unknown>): void {
  if (body.thread === undefined || body.thread === null) return;
  throw new ProxyHttpError(
    400,
    ProxyErrorKind.INVALID_REQUEST,
    "thread: the proxy is stateless and keeps no message threads; send the whole conversation in `messages`, without `thread` (the SDK's tool runner does so by itself after this error)",
    {
      param: "thread",
      details: { details: { error_code: THREAD_UNSUPPORTED_CODE, unsupported: ["thread"] } },
    },
  );
}
