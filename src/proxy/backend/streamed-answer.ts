/**
 * A backend answer read as it arrives, for the guarded path's streamed requests: the body of an
 * open `IncomingMessage` piece by piece as a `ChatAnswer`. A backend that answers a streamed
 * request with a whole `chat.completion` (a server that ignores `stream`) is read as the
 * equivalent event stream.
 */
import type { IncomingMessage } from "node:http";
import { IdleTimer } from "../../clients/idle-timer.ts";
import type { ChatAnswer } from "../../clients/openai/chat-exchange.ts";
import { ProxyErrorKind, ProxyHttpError } from "../errors.ts";

/** An open answer as a `ChatAnswer`: `read` gives each piece of the body, then `null`. */
export class StreamedChatAnswer implements ChatAnswer {
  readonly status: number;
  readonly retryAfter: string | undefined;
  readonly #incoming: IncomingMessage;
  readonly #pieces: AsyncIterator<Buffer>;
  readonly #maxBytes: number;
  readonly #idle: IdleTimer | undefined;
  #eventStream: boolean;
  #size = 0;
  /** Why the answer was cut (its idle deadline), when it was. */
  #fault: ProxyHttpError | undefined;

  /**
   * Read `incoming`: past `limits.maxBytes` in all, or `limits.idleTimeoutMs` (0: none) without a
   * piece, the answer is cut and the read fails (502, 504), as the buffered exchange's.
   */
  constructor(incoming: IncomingMessage, limits: { maxBytes: number; idleTimeoutMs: number }) {
    this.#incoming = incoming;
    this.status = incoming.statusCode ?? 502;
    this.retryAfter = incoming.headers["retry-after"];
    this.#maxBytes = limits.maxBytes;
    const { idleTimeoutMs } = limits;
    this.#idle =
      idleTimeoutMs > 0
        ? new IdleTimer(idleTimeoutMs, () => {
            this.#fault = new ProxyHttpError(
              504,
              ProxyErrorKind.BACKEND_TIMEOUT,
              `Backend sent nothing for ${idleTimeoutMs} ms in the middle of its answer (--idle-timeout)`,
            );
            incoming.destroy(this.#fault);
          })
        : undefined;
    this.#eventStream = incoming.headers["content-type"]?.startsWith("text/event-stream") ?? false;
    this.#pieces = incoming[Symbol.asyncIterator]();
  }

  async text(): Promise<string> {
    const pieces: string[] = [];
    for (let piece = await this.#next(); piece !== null; piece = await this.#next()) pieces.push(piece);
    return pieces.join("");
  }

  async read(): Promise<string | null> {
    if (this.#eventStream || this.status < 200 || this.status >= 300) return this.#next();
    // A whole completion where events were asked for: read it all, then hand it on as events.
    const body = await this.text();
    if (body.length === 0) return null;
    this.#eventStream = true;
    return completionAsEvents(body);
  }

  release(): void {
    this.#idle?.stop();
    if (!this.#incoming.readableEnded) this.#incoming.resume();
  }

  close(): void {
    this.#idle?.stop();
    if (!this.#incoming.readableEnded) this.#incoming.destroy();
  }

  async #next(): Promise<string | null> {
    let next: IteratorResult<Buffer>;
    try {
      next = await this.#pieces.next();
    } catch (error) {
      this.#idle?.stop();
      if (this.#fault) throw this.#fault;
      if (error instanceof ProxyHttpError) throw error;
      throw new ProxyHttpError(
        502,
        ProxyErrorKind.BACKEND_UNREACHABLE,
        "Backend connection lost mid-response",
        {
          cause: error,
        },
      );
    }
    if (next.done) {
      this.#idle?.stop();
      return null;
    }
    this.#idle?.touch();
    this.#size += next.value.length;
    if (this.#size > this.#maxBytes) {
      this.close();
      throw new ProxyHttpError(
        502,
        ProxyErrorKind.BACKEND_ERROR,
        `Backend answer exceeds ${this.#maxBytes} bytes (--max-response-bytes); it was dropped`,
      );
    }
    return next.value.toString("utf8");
  }
}

/**
 * A `chat.completion` body as the `chat.completion.chunk` events that say the same: one delta with
 * the message (its content, reasoning and calls), its finish reason and usage, then `[DONE]`.
 * A body that is not a completion is passed on as it is (the stream reader then reports it).
 */
export function completionAsEvents(body: string): string {
  let completion: unknown;
  try {
    completion = JSON.parse(body);
  } catch {
    return body;
  }
  const choice = (
    completion as { choices?: { message?: Record<string, unknown>; finish_reason?: unknown }[] }
  )?.choices?.[0];
  if (typeof choice?.message !== "object" || choice.message === null) return body;
  const { message } = choice;
  const delta: Record<string, unknown> = { role: "assistant" };
  if (typeof message.content === "string") delta.content = message.content;
  if (typeof message.reasoning_content === "string") delta.reasoning_content = message.reasoning_content;
  if (Array.isArray(message.tool_calls)) {
    delta.tool_calls = message.tool_calls.map((call, index) => ({ index, ...(call as object) }));
  }
  const usage = (completion as { usage?: unknown }).usage;
  const chunk = {
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta, finish_reason: choice.finish_reason ?? "stop" }],
    ...(usage !== undefined && { usage }),
  };
  return `data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`;
}
