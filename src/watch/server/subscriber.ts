/**
 * One live stream's outgoing buffer: messages wait here until the connection takes them, at most
 * `maxBytes` of them; a reader that falls further behind is dropped (its stream closed, one line
 * logged) instead of the server queuing for it without limit.
 */
import type { SSEStreamingApi } from "hono/streaming";

/** How many bytes of updates a live stream may have waiting by default before it is dropped. */
export const DEFAULT_SUBSCRIBER_BUFFER_BYTES = 4 * 1024 * 1024;

/** A server-sent event, formatted once. */
export function sseMessage(event: string, data: string, id?: number): string {
  // JSON.stringify leaves no newline in `data`, so it is one `data:` line.
  return `event: ${event}\ndata: ${data}\n${id === undefined ? "" : `id: ${id}\n`}\n`;
}

/** A bounded sender on one SSE stream. */
export class BoundedSender {
  readonly #stream: SSEStreamingApi;
  readonly #maxBytes: number;
  readonly #onDrop: (waitingBytes: number) => void;
  readonly #queue: string[] = [];
  #waitingBytes = 0;
  #writing = false;
  #closed = false;

  constructor(stream: SSEStreamingApi, maxBytes: number, onDrop: (waitingBytes: number) => void) {
    this.#stream = stream;
    this.#maxBytes = maxBytes;
    this.#onDrop = onDrop;
  }

  /** Bytes given to `send` that the connection has not taken yet. */
  get waitingBytes(): number {
    return this.#waitingBytes;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Queue a formatted message; past the bound (one message always fits) the reader is dropped. */
  send(message: string): void {
    if (this.#closed) return;
    this.#queue.push(message);
    this.#waitingBytes += Buffer.byteLength(message);
    if (this.#waitingBytes > this.#maxBytes && this.#queue.length > 1) {
      const waiting = this.#waitingBytes;
      this.close();
      this.#onDrop(waiting);
      return;
    }
    void this.#pump();
  }

  /** Stop sending and end the stream; what waits is discarded. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#queue.length = 0;
    this.#waitingBytes = 0;
    this.#stream.abort();
  }

  async #pump(): Promise<void> {
    if (this.#writing) return;
    this.#writing = true;
    while (this.#queue.length > 0 && !this.#closed) {
      const message = this.#queue[0] as string;
      await this.#stream.write(message);
      if (this.#closed) break;
      this.#queue.shift();
      this.#waitingBytes -= Buffer.byteLength(message);
    }
    this.#writing = false;
  }
}
